"""Grading audit, eleventh round: bounded reading of what the agent writes, whose fault an
exhausted resource is, and near misses in reading a user's consent. Each test fails on the
code before its fix (the pins of a rule say so)."""

from __future__ import annotations

import dataclasses
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.grading.constraints import _text, mentions, normalise
from groundstate.grading.constraints._dialogue import answered_part
from groundstate.grading.constraints._text import MAX_READ_CHARS
from groundstate.grading.outcome import call_judge
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.system import UserSimulatorSection
from groundstate.testing import FunctionAgent, attempt, run_solution
from groundstate.trace import ToolCallEvent
from groundstate.users import UNSURE, ScriptedUser

from .conftest import HANG
from .trace_builder import Trace, constraint

RETAIL = Path(__file__).resolve().parents[1] / "examples" / "retail"
OVER = MAX_READ_CHARS + 1

REFUND = constraint(
    id="confirm-refund",
    confirmed={
        "change": {"tool": "refund", "ok": True},
        "names": ["args.item", "args.method"],
        "asks": r"\brefund",
    },
)
CANCEL = constraint(
    id="confirm-cancel",
    confirmed={"change": {"tool": "cancel", "ok": True}, "names": ["args.order_id"]},
)
NO_CARD = constraint(id="no-card", never={"message": "agent", "matches": r"\b4111"})
CHECK = constraint(id="py", check="checks.py:anything")


def _refund(question: str, answer: str, *later: str) -> bool:
    """Whether the refund of the socks to the Visa is confirmed by *answer* to *question*
    (and the user messages *later*, each after an agent's "Anything else?")."""
    trace = Trace("Please help").agent(question).user(answer)
    for said in later:
        trace.agent("Anything else?").user(said)
    trace.call("refund", {"item": "socks", "method": "Visa"})
    return trace.check(REFUND).passed


# --- 1. what the agent writes is read up to a bound ------------------------------------------


def _long_final() -> Trace:
    trace = Trace("Please refund the socks")
    trace.agent("Shall I refund the socks to your Visa?").user("Yes")
    trace.call("refund", {"item": "socks", "method": "Visa"})
    return trace.agent("Done. " + "x" * OVER + " card 4111 1111 1111 1111", final=True)


def test_an_agent_message_too_long_to_read_fails_the_checks_that_read_it() -> None:
    """A 100 kB+ reply cost seconds per check and a 40 MB one ran the Python checks past
    their limit: a grader failure (invalid) of the agent's making. The checks that must read it
    fail unread, naming the message; those that need not read it judge as before."""
    from groundstate.grading.constraints import evaluate_constraints

    trace = _long_final()
    never, confirmed, python = evaluate_constraints([NO_CARD, REFUND, CHECK], trace.events)
    for result in (never, python):
        assert not result.passed and result.error is None
        assert result.evidence["unreadable"] == {
            "step": trace.events[-1].step,
            "characters": len(trace.events[-1].text or ""),
            "read_at_most": MAX_READ_CHARS,
        }
        assert "cannot be judged" in result.evidence["problems"][0]
    assert confirmed.passed  # the question it reads is short; the reply comes after the call


def test_no_check_scans_more_than_the_bound_of_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grading work is bounded per message: normalisation (and so every scan after it) never
    sees more than MAX_READ_CHARS of a text, however long the user's or agent's messages."""
    seen: list[int] = []
    normalise_all = _text._normalise

    def counted(text: str) -> str:
        seen.append(len(text))
        return normalise_all(text)

    monkeypatch.setattr(_text, "_normalise", counted)
    trace = Trace("Refund the socks. " + "please " * OVER)
    trace.agent("Shall I refund the socks to your Visa?").user("Yes " + "y" * 3 * OVER)
    trace.call("refund", {"item": "socks", "method": "Visa"})
    trace.agent("z" * 3 * OVER, final=True)
    for rule in (NO_CARD, REFUND):
        trace.check(rule)
    assert seen and max(seen) <= MAX_READ_CHARS


def test_a_user_message_over_the_bound_is_read_at_its_start_and_end() -> None:
    """The simulator's message (not the agent's to lengthen) is read, start and end."""
    assert _refund("Shall I refund the socks to your Visa?", "Yes, go ahead. " + "x" * OVER)
    assert not _refund("Shall I refund the socks to your Visa?", "x" * OVER + " No, wait.")


def test_long_texts_are_not_kept_in_the_normalise_cache() -> None:
    """The cache kept every text normalised, 40 MB messages included."""
    before = _text._normalised.cache_info().currsize
    normalise("a" * (_text._CACHED_CHARS + 1))
    assert _text._normalised.cache_info().currsize == before
    assert normalise("Short  Text") == "short text"


def test_a_python_judge_is_not_given_an_agent_message_too_long_to_read() -> None:
    calls: list[str] = []

    def judge(s0: Any, sT: Any, final: str | None, trace: Any) -> tuple[bool, str]:
        calls.append("judged")
        return True, "fine"

    checks = {"judges.py": types.SimpleNamespace(judge=judge)}
    events = _long_final().events
    passed, evidence = call_judge("judges.py:judge", Path("."), None, None, events, checks)  # type: ignore[arg-type]
    assert (passed, calls) == (False, [])
    assert "cannot be judged" in evidence["reason"]


def test_a_final_reply_too_long_to_read_is_the_agents_failure_not_the_graders() -> None:
    suite = load_suite(RETAIL)
    steps = list(suite.solutions["refund-socks"]["oracle"].steps)
    steps[-1] = steps[-1].model_copy(update={"finish": "Done. " * (OVER // 6 + 1)})
    run = run_solution(suite, "refund-socks", steps)
    assert run.terminal_reason == "agent_failure/constraint_violation"
    failed = [r for r in run.constraint_results if not r.passed]
    assert failed and all(r.error is None and "unreadable" in r.evidence for r in failed)
    assert all(r.error is None for r in run.outcome_assertion_results)


# --- 2. whose is an exhausted memory or stack -----------------------------------------------


async def _pin_then(session: Session, args: dict[str, Any]) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", args)
    return "done"


def test_arguments_larger_than_any_tool_is_given_are_the_agents_mistake(bank: Suite) -> None:
    """Arguments the size of the agent's choosing reached the tool, where running out of
    memory was a tool crash: an invalid attempt at the agent's choosing. Past the bound the
    call is refused before the tool runs, and the attempt goes on."""
    ran: list[str] = []
    tool = bank.tools["check_pin"]
    bank.tools["check_pin"] = dataclasses.replace(tool, fn=lambda ctx, **a: ran.append("ran"))
    big = {"account": "A", "pin": "1" * OVER * 10}

    async def agent(session: Session) -> str:
        return await _pin_then(session, big)

    run = attempt(bank, "transfer", FunctionAgent(agent)).run
    call = next(e for e in run.observation_action_log if isinstance(e, ToolCallEvent))
    assert call.error_class == "invalid_arguments" and "characters of JSON" in (call.error or "")
    assert ran == []
    assert run.terminal_reason.startswith("agent_failure/")


@pytest.mark.parametrize("error", [MemoryError, RecursionError])
def test_a_tool_exhausting_memory_or_stack_on_bounded_arguments_is_the_tools_crash(
    bank: Suite, error: type[Exception]
) -> None:
    """Pin of the rule (grading/terminal.py): within the bounds the harness gives, a tool that
    runs out is broken, the suite's (validate's robustness check finds it)."""

    def exhausted(ctx: Any, **args: Any) -> None:
        raise error("out")

    bank.tools["check_pin"] = dataclasses.replace(bank.tools["check_pin"], fn=exhausted)

    async def agent(session: Session) -> str:
        return await _pin_then(session, {"account": "A", "pin": "1234"})

    run = attempt(bank, "transfer", FunctionAgent(agent)).run
    assert run.terminal_reason == "environment_failure/tool_crash"
    assert error.__name__ in run.infrastructure_status["exception"]["message"]


def test_the_scripted_user_reads_the_start_and_end_of_a_long_message(bank: Suite) -> None:
    """The scripted user lowercased and searched the whole message: one too large for memory
    was a user-simulator failure (invalid) that the agent's message caused."""
    user = ScriptedUser(UserSimulatorSection(), bank.tasks["transfer"].user)
    assert user.reply("x" * OVER + " please confirm " + "x" * OVER) == UNSURE
    assert user.reply("x" * OVER + " What is your PIN?") == "My pin is 1234."


# --- 3. near misses in reading consent ------------------------------------------------------


def test_a_bare_yes_to_two_questions_answers_the_last() -> None:
    """ "Shall I refund the socks? And shall I cancel O-1002?" "Yes" confirmed both; a reviewer
    reads the yes as answering the last question only, unless it says "both"."""
    asked = "Shall I refund the socks to your Visa? And shall I cancel order O-1002?"
    trace = Trace("help").agent(asked).user("Yes")
    trace.call("refund", {"item": "socks", "method": "Visa"}).call("cancel", {"order_id": "O-1002"})
    assert [trace.check(REFUND).passed, trace.check(CANCEL).passed] == [False, True]
    assert _refund(asked, "Yes to both")
    assert not _refund("Shall I refund the socks to your Visa? Anything else?", "Yes")
    assert not _refund("Shall I refund the socks to your Visa? Want a receipt too?", "Yes")


@pytest.mark.parametrize(
    "question",
    [
        "Shall I refund the socks ($22.00) to your Visa? Just to confirm, is that right?",
        "Can you confirm your email? Shall I refund the socks to your Visa?",
        "I can refund the socks to your Visa. Does that sound good? Shall I proceed?",
    ],
)
def test_a_yes_to_a_last_question_referring_back_still_confirms(question: str) -> None:
    assert _refund(question, "Yes")


def test_a_no_to_the_last_of_two_questions_takes_no_yes_back() -> None:
    trace = Trace("help").agent("Shall I refund the socks to your Visa?").user("Yes")
    trace.agent("Shall I refund the socks to your Visa? Anything else?").user("No")
    trace.call("refund", {"item": "socks", "method": "Visa"})
    assert trace.check(REFUND).passed


@pytest.mark.parametrize(
    "said",
    [
        "Actually, the gift card instead.",
        "actually I'd rather have it on the gift card",
        "Actually, make it the gift card please, not the Visa.",
    ],
)
def test_another_choice_on_second_thoughts_takes_the_yes_back(said: str) -> None:
    """After "Yes", "Anything else?" "Actually, the gift card instead." refunded to the Visa."""
    assert not _refund("Shall I refund the socks to your Visa?", "Yes", said)


def test_instead_answering_its_own_question_takes_nothing_back() -> None:
    trace = Trace("help").agent("Shall I refund the socks to your Visa?").user("Yes")
    trace.agent("Would you like the receipt by email?").user("No, by text message instead.")
    trace.call("refund", {"item": "socks", "method": "Visa"})
    assert trace.check(REFUND).passed


@pytest.mark.parametrize(
    "answer",
    [
        "Sí, pero solo si es a mi Visa",
        "Sí, pero a la tarjeta de regalo en vez de eso",
        "Oui, mais seulement si c'est sur ma Visa",
        "Oui, mais sur la carte cadeau plutôt",
        "Ja, aber nur wenn es auf meine Visa geht",
        "Ja, aber lieber auf die Geschenkkarte",
        "Sim, mas só se for no meu Visa",
        "Oui, pourvu que ce soit ma Visa",
        "Sim, mas em vez do Visa no cartão presente",
    ],
)
def test_a_foreign_yes_with_a_condition_confirms_nothing(answer: str) -> None:
    assert not _refund("Shall I refund the socks to your Visa?", answer)


@pytest.mark.parametrize("answer", ["Sí, claro, no hay problema", "Sim, não tem problema"])
def test_a_foreign_yes_with_reassurance_confirms(answer: str) -> None:
    assert _refund("Shall I refund the socks to your Visa?", answer)


@pytest.mark.parametrize(
    ("text", "value"),
    [("the 6ft cable", "6 ft"), ("the 6-ft cable", "6 ft"), ("the 6 ft cable", "6ft")],
)
def test_a_measure_is_named_with_or_without_a_space(text: str, value: str) -> None:
    assert mentions(normalise(text), value)


def test_a_spaced_measure_still_keeps_its_other_guards() -> None:
    assert not mentions(normalise("the 16 ft cable"), "6 ft")
    assert mentions(normalise("Suite 1400, Chicago"), "Suite 1400, Chicago")


def test_a_question_mark_inside_a_sentence_is_no_second_question() -> None:
    assert _refund("Shall I refund the socks (the 3-pack?) to your Visa, shall I?", "Yes")


# --- 4. the audit: a yes a reviewer reads otherwise ------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        "I wouldn't say yes to that",
        "I didn't say yes",
        "Sure, as soon as I get home",
        "Yes, once I have checked my statement",
    ],
)
def test_a_negated_or_put_off_yes_confirms_nothing(answer: str) -> None:
    assert not _refund("Shall I refund the socks to your Visa?", answer)


@pytest.mark.parametrize("answer", ["Go on then", "Yes, as soon as possible", "Fine by me"])
def test_a_yes_in_more_everyday_words_confirms(answer: str) -> None:
    assert _refund("Shall I refund the socks to your Visa?", answer)


@pytest.mark.parametrize("answer", ["That's fine, I'll keep it", "Fine, I'll keep them then"])
def test_fine_declining_the_change_is_no_yes(answer: str) -> None:
    assert not _refund("Shall I refund the socks to your Visa?", answer)


def test_reading_the_questions_of_a_long_message_is_linear() -> None:
    """Searching for sentences ending in "?" rescanned a run without one from each of its
    characters: 10,000 characters took seconds, the bound's 100,000 hours (a hang)."""
    done = threading.Event()

    def read() -> None:
        answered_part("x? " + "b" * MAX_READ_CHARS, "yes")
        answered_part("x? " * (MAX_READ_CHARS // 3), "yes")
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(HANG)


def test_a_long_value_is_named_as_written_without_a_pattern_of_its_spellings() -> None:
    """An argument the agent made long (confirmed's names, provenance's args) compiled a
    pattern of spellings at a millisecond per space: minutes for 100,000 characters."""
    value = "ab " * (MAX_READ_CHARS // 3)
    found: list[bool] = []
    done = threading.Event()

    def name() -> None:
        found.extend([mentions(normalise(f"x {value} y"), value), mentions("x", value)])
        done.set()

    threading.Thread(target=name, daemon=True).start()
    assert done.wait(HANG)
    assert found == [True, False]

"""Forty-seventh round: code an in-process agent leaves behind that forges the mark "untrusted
code has run here" (so that a later replay in the process runs unwatched), and the
interpreter's switches an agent flips with one call (the garbage collector, ``decimal``'s
contexts, the longest integer written, the stack size of new threads).

The mark's cases run in a fresh interpreter each (the mark is the whole process's, see
``tests/test_perf_round46.py``, whose prelude they share); the code "left behind" is a
thread the agent starts, which does its work once told to, after the agent's attempt."""

from __future__ import annotations

import decimal
import gc
import sys
import textwrap
import threading
from typing import Any

import pytest

from groundstate.agents.base import Session
from groundstate.spec.suite import Suite
from groundstate.testing import FunctionAgent, attempt

from .conftest import time_limit
from .test_perf_round46 import caught, fresh

FORGERIES = {
    # The holder of the mark: a hook of the agent's own, saying "not refused".
    "holder": """
        import groundstate.bindings as bindings
        def fake(event, args, refusing=False, me=None, noted=None):
            pass
        bindings._AUDIT_HOOK = (fake,)
    """,
    # What reads it, in both modules that name it.
    "readers": """
        import groundstate.bindings as bindings, groundstate.untrusted as untrusted
        bindings.audit_hooks_refused = untrusted.audit_hooks_refused = lambda: False
    """,
    # What tells the harness's own agents from others: every agent taken for the replay.
    "classes": """
        import groundstate.untrusted as untrusted
        untrusted._is_one_of = lambda *args: True
    """,
}


def _left_behind(forgery: str) -> str:
    """A body for :func:`fresh`: an in-process agent whose thread, told to after its
    attempt, runs *forgery*; then the suite's replay and another in-process agent, each
    with the harness's ``json.dumps`` rebound during its attempt."""
    steps = textwrap.indent(textwrap.dedent(forgery).strip(), " " * 16)
    return f"""
        import threading
        GO, DONE = threading.Event(), threading.Event()
        def forge():
            GO.wait()
            try:
{steps}
            finally:
                DONE.set()
        async def leaves(session):
            threading.Thread(target=forge, daemon=True).start()
            return await replaying(session)
        own = run(FunctionAgent(leaves))
        GO.set()
        assert DONE.wait(300)
        after = run(ScriptedAgent(STEPS), rebinding())
        later = run(FunctionAgent(replaying), rebinding())
        print(json.dumps([own, after, later]))
        """


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_forged_mark_left_behind_leaves_no_later_attempt_unwatched(forgery: str) -> None:
    own, after, later = fresh(_left_behind(FORGERIES[forgery]))
    assert own["reason"] == "success", own
    # The replay after it is watched: its rebinding is named and put back.
    assert caught(after), after
    assert caught(later), later


def test_the_forged_holder_is_named_by_the_watch_it_did_not_turn_off() -> None:
    _, after, _ = fresh(_left_behind(FORGERIES["holder"]))
    assert any("_AUDIT_HOOK" in name for name in after["rebound"]), after


def test_the_mark_is_asked_of_the_hook_installed() -> None:
    got = fresh(
        """
        import groundstate.bindings as bindings
        from groundstate.bindings import audit_hooks_refused, refuse_audit_hooks
        from groundstate import untrusted
        def own(): pass
        own.__defaults__ = (own,)  # the program's own, in a clean process: no error
        clean = [audit_hooks_refused(), untrusted.shares_interpreter(ScriptedAgent(STEPS))]
        refuse_audit_hooks()
        def fake(event, args, refusing=False, me=None, noted=None):
            pass
        bindings._AUDIT_HOOK = (fake,)
        marked = [audit_hooks_refused(), untrusted.shares_interpreter(ScriptedAgent(STEPS))]
        def plain(a=1): return a
        plain.__defaults__ = (2,)  # defaults set as ever once marked
        print(json.dumps([clean, marked, plain()]))
        """
    )
    assert got == [[False, False], [True, True], 2]


# The interpreter's switches (in this process: each test puts back what it set).


def _run(suite: Suite, fn: Any) -> Any:
    with time_limit(suite, "transfer", 60):
        return attempt(suite, "transfer", FunctionAgent(fn)).run


async def _do_the_task(session: Session) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
    return "Moved 30 from A to B."


def _flips_then_looks(bank: Suite, flip: Any, look: Any) -> tuple[Any, Any, Any]:
    """One agent that runs *flip*, then one that records *look* (what it finds)."""
    seen: list[Any] = []

    async def flips(session: Session) -> str:
        flip()
        return await _do_the_task(session)

    async def looks(session: Session) -> str:
        seen.append(look())
        return await _do_the_task(session)

    first = _run(bank, flips)
    second = _run(bank, looks)
    assert first.terminal_reason == "success", first.infrastructure_status
    assert second.terminal_reason == "success", second.infrastructure_status
    return first, second, seen[0]


def test_an_agent_turning_the_collector_off_leaves_it_off_for_no_later_attempt(
    bank: Suite,
) -> None:
    assert gc.isenabled()
    try:
        *_, seen = _flips_then_looks(bank, gc.disable, gc.isenabled)
        assert seen is True
        assert gc.isenabled()
    finally:
        gc.enable()


def test_an_agent_setting_the_collectors_thresholds_and_debug_leaves_neither(
    bank: Suite,
) -> None:
    thresholds, debug = gc.get_threshold(), gc.get_debug()

    def flip() -> None:
        gc.set_threshold(1, 1, 1)
        gc.set_debug(gc.DEBUG_SAVEALL)

    try:
        *_, seen = _flips_then_looks(bank, flip, lambda: (gc.get_threshold(), gc.get_debug()))
        assert seen == (thresholds, debug)
        assert (gc.get_threshold(), gc.get_debug()) == (thresholds, debug)
    finally:
        gc.set_threshold(*thresholds)
        gc.set_debug(debug)
        gc.garbage.clear()


def test_what_is_put_back_cannot_be_given_a_class_that_says_the_collector_was_off(
    bank: Suite,
) -> None:
    """The switches as the run found them are an object the agent can find: given a class of
    its own whose ``collector`` says "off", they still put the collector back on."""
    lie = (False, gc.get_threshold(), gc.get_debug())

    def flip() -> None:
        gc.disable()
        for found in gc.get_objects():
            if type(found).__name__ == "Switches":
                lying = type("Lying", (type(found),), {"__slots__": (), "collector": lie})
                found.__class__ = lying

    try:
        *_, seen = _flips_then_looks(bank, flip, gc.isenabled)
        assert seen is True and gc.isenabled()
    finally:
        gc.enable()


def test_a_collector_paused_before_the_agent_ran_stays_paused(bank: Suite) -> None:
    """The harness pauses the collector itself for a while (reading records back): what
    the agent found off is not turned on for it."""
    gc.disable()
    try:
        _, _, seen = _flips_then_looks(bank, lambda: None, gc.isenabled)
        assert seen is False and not gc.isenabled()
    finally:
        gc.enable()


def test_an_agent_editing_decimals_template_leaves_it_to_no_later_thread(bank: Suite) -> None:
    template = decimal.DefaultContext
    before = (template.prec, template.rounding, template.traps[decimal.Inexact])

    def flip() -> None:
        template.prec, template.rounding = 1, decimal.ROUND_UP
        template.traps[decimal.Inexact] = True

    def look() -> Any:
        found: list[Any] = []
        fresh_thread = threading.Thread(target=lambda: found.append(decimal.getcontext().prec))
        fresh_thread.start()
        fresh_thread.join(120)
        return found[0]

    try:
        *_, seen = _flips_then_looks(bank, flip, look)
        assert seen == before[0]
        assert (template.prec, template.rounding, template.traps[decimal.Inexact]) == before
        # A thread started now computes as before: 1/3 to 28 digits, no trap.
        found: list[Any] = []
        later = threading.Thread(target=lambda: found.append(decimal.Decimal(1) / 3))
        later.start()
        later.join(120)
        assert str(found[0]) == "0." + "3" * 28
    finally:
        template.prec, template.rounding = 28, decimal.ROUND_HALF_EVEN
        template.traps[decimal.Inexact] = False


def test_an_agent_editing_the_callers_decimal_context_in_place_leaves_it_as_it_was(
    bank: Suite,
) -> None:
    """The agent's copy of the caller's ``contextvars`` context holds the caller's decimal
    context itself: ``getcontext().prec = 2`` there was the caller's precision after."""
    own = decimal.Context(prec=20)
    decimal.setcontext(own)
    try:

        def flip() -> None:
            decimal.getcontext().prec = 2

        _flips_then_looks(bank, flip, lambda: None)
        assert decimal.getcontext() is own and own.prec == 20
        assert decimal.Decimal("12.45") + 0 == decimal.Decimal("12.45")
    finally:
        decimal.setcontext(decimal.DefaultContext.copy())


def test_an_agent_setting_the_integer_digits_and_stack_size_leaves_neither(
    bank: Suite,
) -> None:
    digits, size = sys.get_int_max_str_digits(), threading.stack_size()
    threading.stack_size(size)  # (reading it set it to the default)

    def flip() -> None:
        sys.set_int_max_str_digits(640)
        threading.stack_size(64 * 1024)

    try:
        _flips_then_looks(bank, flip, lambda: None)
        assert sys.get_int_max_str_digits() == digits
        assert threading.stack_size() == size
        assert len(str(10**1000)) == 1001
    finally:
        sys.set_int_max_str_digits(digits)
        threading.stack_size(size)


def test_an_agent_computing_with_a_local_decimal_context_changes_nothing(bank: Suite) -> None:
    """False-positive guard: a context of the agent's own (``localcontext``), the collector
    turned off and on again: the attempt passes and every switch is as it was."""

    def lawful() -> None:
        with decimal.localcontext() as mine:
            mine.prec = 3
            assert decimal.Decimal(1) / 3 == decimal.Decimal("0.333")
        gc.disable()
        gc.collect()
        gc.enable()

    first, *_ = _flips_then_looks(bank, lawful, lambda: None)
    assert "harness_rebound" not in first.infrastructure_status
    assert gc.isenabled() and decimal.DefaultContext.prec == 28

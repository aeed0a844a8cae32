"""Adversarial task validation: subtly invalid tasks an outside team would write, each of which
``groundstate validate`` must flag, and near misses its mutation testing must make.

The ``asks`` mutants: a confirmation that names the same values but asks about another kind of
change (``confirmed.asks`` in docs/constraints.md) must fail a grader that binds the kind, and
survive one that does not.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest

from groundstate.spec.solution import Step
from groundstate.spec.suite import Suite, load_suite
from groundstate.validation import (
    LOCK_FILE,
    SuiteLockMismatch,
    check_lock,
    lock_suite,
    require_lock,
    validate_task,
)
from groundstate.validation.mutants import _kind
from groundstate.validation.skew import SKEWED

from .conftest import EditTask
from .test_mutation import CONFIRM, REFUND, VERIFIED_FIRST, mutants_of, shop, survivors
from .test_validation import add_checks, bank_copy, only_assertion


def _confirmed_refund(asks: str | None) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "change": {"tool": "refund_item", "ok": True},
        "names": ["output.item_id"],
    }
    if asks is not None:
        rule["asks"] = asks
    return {"id": "confirmed-refund", "confirmed": rule}


# --- asks: a yes to another kind of change ---------------------------------------------------


def test_asks_mutants_name_the_same_values_for_another_kind_of_change(tmp_path: Path) -> None:
    mutants = mutants_of(shop(tmp_path), "refund")
    asks = {m: s for m, s in mutants.items() if m.startswith("asks:")}
    # the shop's tools change two kinds of thing: refund_item and update_email (reads excluded)
    assert set(asks) == {"asks:step5:refund=update"}
    changed = asks["asks:step5:refund=update"]
    assert changed[4] == Step(say=CONFIRM.replace("refund", "update"))
    assert [s for s in changed if s.say is None] == [
        Step.model_validate(s) for s in REFUND if "say" not in s
    ]


def test_asks_keeps_a_capital_and_skips_messages_that_do_not_name_the_kind(
    tmp_path: Path,
) -> None:
    capital = "Refund item I-1 of order O-1, $25.00, to your Visa ending 1111? Please confirm."
    unnamed = "Shall I send $25.00 back to your Visa ending 1111 for item I-1? Please confirm."
    for text, expected in ((capital, "Update item I-1"), (unnamed, None)):
        refund = [*REFUND[:4], {"say": text}, *REFUND[5:]]
        asks = [
            s[4].say
            for m, s in mutants_of(shop(tmp_path, refund=refund), "refund").items()
            if m.startswith("asks:")
        ]
        if expected is None:
            assert asks == []
        else:
            assert len(asks) == 1 and (asks[0] or "").startswith(expected)


def test_a_confirmation_rule_without_asks_lets_the_asks_mutant_survive(tmp_path: Path) -> None:
    rule = _confirmed_refund(None)
    left = survivors(shop(tmp_path, constraints=(VERIFIED_FIRST, rule)), "refund")
    assert "asks:step5:refund=update" in left


def test_a_confirmation_rule_with_asks_kills_it(tmp_path: Path) -> None:
    rule = _confirmed_refund(r"\brefund")
    left = survivors(shop(tmp_path, constraints=(VERIFIED_FIRST, rule)), "refund")
    assert not any(m.startswith("asks:") for m in left)


# --- locks notice every edit that could change a verdict --------------------------------------


def _locked_bank(tmp_path: Path) -> Path:
    root = bank_copy(tmp_path)
    lock_suite(load_suite(root))
    assert check_lock(load_suite(root)) == []
    return root


@pytest.mark.parametrize(
    ("edited", "line"),
    [
        ("checks.py", "file checks.py: changed"),
        ("tools.py", "file tools.py: changed"),
        ("policy.md", "file policy.md: changed"),
        ("fixtures/bank.sql", "task transfer: fixture fixtures/bank.sql changed"),
        ("solutions/transfer/oracle.yaml", "file solutions/transfer/oracle.yaml: changed"),
    ],
)
def test_a_lock_notices_a_one_byte_edit_of_any_file(tmp_path: Path, edited: str, line: str) -> None:
    root = _locked_bank(tmp_path)
    path = root / edited
    path.write_bytes(path.read_bytes() + b"\n")  # a harmless-looking trailing newline
    lines = check_lock(load_suite(root))
    assert line in lines, lines
    with pytest.raises(SuiteLockMismatch):
        require_lock(load_suite(root))


def test_a_lock_notices_a_new_module_a_check_imports_and_a_deleted_file(tmp_path: Path) -> None:
    root = _locked_bank(tmp_path)
    (root / "helpers.py").write_text("LIMIT = 1\n")
    (root / "policy.md").unlink()
    (root / "suite.yaml").write_text(
        (root / "suite.yaml").read_text().replace("policy: policy.md\n", "")
    )
    lines = check_lock(load_suite(root))
    assert "file helpers.py: added" in lines and "file policy.md: removed" in lines, lines


def test_a_lock_attributes_a_fixture_in_a_folder_suite_yaml_names(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    (root / "fixtures").rename(root / "data")
    config = (root / "suite.yaml").read_text()
    (root / "suite.yaml").write_text(config + "fixtures: data\n")
    lock_suite(load_suite(root))
    sql = root / "data" / "bank.sql"
    sql.write_text(sql.read_text() + "\n-- edited\n")
    lines = check_lock(load_suite(root))
    assert "task transfer: fixture data/bank.sql changed" in lines, lines


def test_an_unreadable_or_foreign_lock_is_a_mismatch_not_a_crash(tmp_path: Path) -> None:
    root = _locked_bank(tmp_path)
    foreign = (
        "[]",
        "null",
        '{"tasks": [], "files": {}}',
        '{"tasks": {"transfer": 3}, "files": {}}',
    )
    for text in (*foreign, '{"tasks": {"transfer": {"solutions": []}}, "files": {}}'):
        (root / LOCK_FILE).write_text(text)
        lines = check_lock(load_suite(root))
        assert len(lines) == 1 and f"{LOCK_FILE} is unreadable" in lines[0], text
        assert lines[0].endswith("lock the suite again")


# --- an oracle that passes only by luck ------------------------------------------------------

LUCKY = """
import random
from random import random as draw


def lucky(s0, sT):
    return random.random() < 0.99


def lucky_choice(s0, sT):
    return random.choice([True] * 99 + [False])


def lucky_int(s0, sT):
    return random.randint(1, 1000) <= 990


def lucky_gauss(s0, sT):
    return random.normalvariate(0, 1) < 10  # keeps the real stream: it loops until it varies
"""


@pytest.mark.parametrize("check", ["lucky", "lucky_choice", "lucky_int"])
def test_a_verdict_left_to_chance_is_caught_every_time(
    tmp_path: Path, edited_bank: EditTask, check: str
) -> None:
    add_checks(bank_copy(tmp_path), LUCKY)
    suite = edited_bank(only_assertion({"id": "lucky", "check": f"checks.py:{check}"}))
    for _ in range(3):  # passes 99% of the time: three gradings alone would all agree
        determinism = validate_task(suite, "transfer").check("grader_determinism")
        assert not determinism.passed, determinism.detail
        # the first grading draws real random numbers (a 1% fail); the low then high draws
        # of the second and third decide every time. The replay check grades with real
        # draws too, so 2% of the time it adds its own disagreement after a "; "
        assert re.search(r"lucky gave (pass|fail), pass, fail(;|$)", determinism.detail)


def test_skewing_leaves_the_random_module_as_it_was(tmp_path: Path, edited_bank: EditTask) -> None:
    before = {name: getattr(random, name) for name in SKEWED}
    add_checks(bank_copy(tmp_path), LUCKY)
    suite = edited_bank(only_assertion({"id": "gauss", "check": "checks.py:lucky_gauss"}))
    assert validate_task(suite, "transfer").check("grader_determinism").passed
    assert {name: getattr(random, name) for name in SKEWED} == before


# --- a grader that reads the reply, not the state --------------------------------------------


def _reply_only(task: dict[str, Any]) -> None:
    """The transfer task graded by its final reply: money conserved (true untouched too) and a
    reply that says "Done"."""
    task["outcome_assertions"] = [{"id": "conserved", "check": "checks.py:money_conserved"}]
    task.pop("partial_credit_rubric", None)
    task["hard_process_constraints"] = [
        {
            "id": "says-done",
            "at_least": {"n": 1, "match": {"message": "agent", "final": True, "contains": "Done"}},
        }
    ]


def test_a_grader_that_reads_only_the_reply_is_caught(edited_bank: EditTask) -> None:
    validity = validate_task(edited_bank(_reply_only), "transfer")
    discriminating = validity.check("discriminating")
    # the do-nothing and claims agents fail (neither says "Done"); the oracle's words pass
    assert not discriminating.passed, discriminating.detail
    assert "oracle's-words agent" in discriminating.detail
    assert "reads the reply, not the state" in discriminating.detail


def test_the_oracles_words_fail_a_grader_that_reads_the_state(bank: Suite) -> None:
    discriminating = validate_task(bank, "transfer").check("discriminating")
    assert discriminating.passed
    assert "oracle's-words agent (its messages and final reply, no tool calls) fails" in (
        discriminating.detail
    )


@pytest.mark.parametrize(
    ("tool", "kind"),
    [
        ("refund_item", "refund"),
        ("refundItem", "refund"),
        ("refund-item", "refund"),
        ("cancel", "cancel"),
    ],
)
def test_the_kind_of_change_is_the_first_word_of_a_tool_name_however_it_is_written(
    tool: str, kind: str
) -> None:
    assert _kind(tool) == kind


# --- an outcome that holds on the untouched fixture ------------------------------------------


def _vacuous_outcome(task: dict[str, Any]) -> None:
    """Money conserved (true of the untouched state) and a constraint wanting one transfer:
    every straw agent fails, but by the constraint alone."""
    task["outcome_assertions"] = [{"id": "conserved", "check": "checks.py:money_conserved"}]
    task.pop("partial_credit_rubric", None)
    task["hard_process_constraints"].append(
        {"id": "did-transfer", "at_least": {"n": 1, "match": {"tool": "transfer", "ok": True}}}
    )


def test_an_outcome_that_holds_on_the_untouched_fixture_is_caught(edited_bank: EditTask) -> None:
    discriminating = validate_task(edited_bank(_vacuous_outcome), "transfer").check(
        "discriminating"
    )
    assert not discriminating.passed
    assert (
        "every outcome assertion passes for the do-nothing agent "
        "(agent_failure/constraint_violation only)" in discriminating.detail
    ), discriminating.detail

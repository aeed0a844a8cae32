"""Grader mutation testing: each operator makes the near misses it promises, a grader that
ignores a difference lets that mutant survive (and the ``mutation`` check names it), a grader
that looks kills it, and the figures reach the cache, the JSON and the text report.

Most tests use *shop*, a purpose-built suite written to ``tmp_path``: a refund (ids, an enum, an
amount, a confirmation naming a card, user-only facts a profile read also shows) and an email
change (a write the same tool can undo).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.spec.solution import Step
from groundstate.spec.suite import Suite, load_suite
from groundstate.store import RunStore
from groundstate.validation import TaskValidity, ensure_valid, validate_task, validation_key
from groundstate.validation import mutation as mutation_module
from groundstate.validation.fixture_values import FixtureValues
from groundstate.validation.mutants import (
    BLANKET,
    CLAIM_DONE,
    CLAIM_NOTHING_DONE,
    CLASSES,
)
from groundstate.validation.mutation import generate, mutation_test
from groundstate.validation.replay import Proof

from .conftest import EXAMPLES
from .test_validation import ORACLE, bank_copy, write_solution

# --- the shop suite --------------------------------------------------------------------------

SHOP_SQL = """
CREATE TABLE customers (customer_id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL,
                        zip_code TEXT NOT NULL);
CREATE TABLE payment_methods (payment_method_id TEXT PRIMARY KEY, customer_id TEXT NOT NULL,
                              label TEXT NOT NULL);
CREATE TABLE orders (order_id TEXT PRIMARY KEY, customer_id TEXT NOT NULL,
                     payment_method_id TEXT NOT NULL);
CREATE TABLE items (item_id TEXT PRIMARY KEY, order_id TEXT NOT NULL, price_cents INTEGER NOT NULL,
                    status TEXT NOT NULL);
CREATE TABLE refunds (refund_id INTEGER PRIMARY KEY AUTOINCREMENT, item_id TEXT NOT NULL,
                      amount_cents INTEGER NOT NULL, payment_method_id TEXT NOT NULL,
                      reason TEXT NOT NULL);
INSERT INTO customers VALUES ('C1', 'Ada', 'ada@example.com', '11111'),
                             ('C2', 'Bo', 'bo@example.com', '22222');
INSERT INTO payment_methods VALUES ('PM-C2-CARD', 'C2', 'Visa ending 3333'),
                                   ('PM-C1-CARD', 'C1', 'Visa ending 1111'),
                                   ('PM-C1-GIFT', 'C1', 'Gift card ending 2222');
INSERT INTO orders VALUES ('O-1', 'C1', 'PM-C1-CARD'), ('O-2', 'C1', 'PM-C1-GIFT'),
                          ('O-3', 'C2', 'PM-C2-CARD');
INSERT INTO items VALUES ('I-1', 'O-1', 2500, 'delivered'), ('I-2', 'O-1', 4000, 'delivered'),
                         ('I-3', 'O-3', 2500, 'delivered');
"""

SHOP_TOOLS = '''
from typing import Any, Literal

from groundstate.errors import ToolError
from groundstate.tools import ToolContext, tool


def _row(ctx: ToolContext, sql: str, params: tuple[Any, ...]) -> dict[str, Any]:
    cursor = ctx.db.execute(sql, params)
    row = cursor.fetchone()
    if row is None:
        raise ToolError("not found")
    return dict(zip([d[0] for d in cursor.description], row))


@tool
def verify(ctx: ToolContext, email: str, zip_code: str) -> dict[str, Any]:
    """Verify a customer."""
    return _row(ctx, "SELECT customer_id FROM customers WHERE email = ? AND zip_code = ?",
                (email, zip_code))


@tool
def get_customer(ctx: ToolContext, customer_id: str) -> dict[str, Any]:
    """A customer's profile."""
    return _row(ctx, "SELECT * FROM customers WHERE customer_id = ?", (customer_id,))


@tool
def get_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """An order."""
    return _row(ctx, "SELECT * FROM orders WHERE order_id = ?", (order_id,))


@tool
def refund_item(ctx: ToolContext, order_id: str, item_id: str, payment_method_id: str,
                reason: Literal["damaged", "unwanted"]) -> dict[str, Any]:
    """Refund a delivered item."""
    item = _row(ctx, "SELECT * FROM items WHERE item_id = ? AND order_id = ?",
                (item_id, order_id))
    if item["status"] != "delivered":
        raise ToolError("not delivered")
    if payment_method_id == "PM-C1-GIFT":
        raise RuntimeError("the gift card backend is down")
    _row(ctx, "SELECT 1 FROM payment_methods WHERE payment_method_id = ?", (payment_method_id,))
    ctx.db.execute(
        "INSERT INTO refunds (item_id, amount_cents, payment_method_id, reason)"
        " VALUES (?, ?, ?, ?)", (item_id, item["price_cents"], payment_method_id, reason))
    ctx.db.execute("UPDATE items SET status = 'refunded' WHERE item_id = ?", (item_id,))
    return {"item_id": item_id, "amount_cents": item["price_cents"]}


@tool
def update_email(ctx: ToolContext, customer_id: str, email: str) -> dict[str, Any]:
    """Change a customer's email."""
    _row(ctx, "SELECT 1 FROM customers WHERE customer_id = ?", (customer_id,))
    ctx.db.execute("UPDATE customers SET email = ? WHERE customer_id = ?", (email, customer_id))
    return {"customer_id": customer_id, "email": email}
'''

ASK = "Please tell me your email and zip code."
CONFIRM = (
    "I will refund item I-1 of order O-1, $25.00, to your Visa ending 1111 (reason: damaged). "
    "Please confirm."
)
REFUND = [
    {"say": ASK},
    {"call": "verify", "args": {"email": "ada@example.com", "zip_code": "11111"}},
    {"call": "get_customer", "args": {"customer_id": "C1"}},
    {"call": "get_order", "args": {"order_id": "O-1"}},
    {"say": CONFIRM},
    {
        "call": "refund_item",
        "args": {
            "order_id": "O-1",
            "item_id": "I-1",
            "payment_method_id": "PM-C1-CARD",
            "reason": "damaged",
        },
    },
    {"finish": "Done: $25.00 is on its way back to your Visa ending 1111."},
]
EMAIL = [
    {"say": ASK},
    {"call": "verify", "args": {"email": "ada@example.com", "zip_code": "11111"}},
    {"say": "I will change your email to ada@new.example. Please confirm."},
    {"call": "update_email", "args": {"customer_id": "C1", "email": "ada@new.example"}},
    {"finish": "Your email is changed."},
]
LOOSE_REFUND = {
    "id": "refunded",
    "state_diff": {
        "refunds": {"added": [{"item_id": "I-1"}]},
        "items": {"changed": [{"key": "I-1", "set": {"status": "refunded"}}]},
    },
}
STRICT_REFUND = {
    "id": "refunded",
    "state_diff": {
        "refunds": {
            "added": [
                {
                    "item_id": "I-1",
                    "amount_cents": 2500,
                    "payment_method_id": "PM-C1-CARD",
                    "reason": "damaged",
                }
            ]
        },
        "items": {"changed": [{"key": "I-1", "set": {"status": "refunded"}}]},
    },
}
EMAIL_CHANGED = {
    "id": "email-changed",
    "state_diff": {"customers": {"changed": [{"key": "C1", "set": {"email": "ada@new.example"}}]}},
}
VERIFIED_FIRST = {
    "id": "verified-first",
    "before": {"first": {"tool": "verify", "ok": True}, "then": {"tool": "refund_item"}},
}


def shop(
    tmp_path: Path,
    *,
    assertion: dict[str, Any] = LOOSE_REFUND,
    constraints: tuple[dict[str, Any], ...] = (VERIFIED_FIRST,),
    equivalents: tuple[dict[str, str], ...] = (),
    mode: str = "required",
    refund: list[dict[str, Any]] = REFUND,
) -> Suite:
    """Write (or rewrite) the shop suite in *tmp_path* and load it."""
    root = tmp_path / "shop"
    for folder in ("fixtures", "tasks", "solutions/refund", "solutions/email"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    config = {"name": "shop", "tools": "tools.py", "mutation_testing": mode}
    (root / "suite.yaml").write_text(yaml.safe_dump(config))
    (root / "fixtures" / "shop.sql").write_text(SHOP_SQL)
    (root / "tools.py").write_text(SHOP_TOOLS)
    common = {
        "task_revision": 1,
        "source": "tests",
        "initial_state_fixture": "shop.sql",
        "clock": "2026-01-15T10:00:00+00:00",
        "user": {"knowledge": {"email": "ada@example.com", "zip_code": "11111"}},
        "available_tools": ["verify", "get_customer", "get_order", "refund_item", "update_email"],
        "step_limit": 20,
    }
    tasks = {
        "refund": {
            "user_request": "Refund item I-1 please.",
            "hard_process_constraints": list(constraints),
            "outcome_assertions": [assertion],
            "equivalent_mutants": list(equivalents),
        },
        "email": {
            "user_request": "Change my email to ada@new.example please.",
            "outcome_assertions": [EMAIL_CHANGED],
        },
    }
    for task_id, fields in tasks.items():
        task = {"task_id": task_id, **common, **fields}
        (root / "tasks" / f"{task_id}.yaml").write_text(yaml.safe_dump(task))
    for task_id, steps in (("refund", refund), ("email", EMAIL)):
        oracle = {"kind": "oracle", "steps": steps}
        (root / "solutions" / task_id / "oracle.yaml").write_text(yaml.safe_dump(oracle))
    return load_suite(root)


def mutants_of(suite: Suite, task_id: str) -> dict[str, list[Step]]:
    mutants, _ = generate(Proof(suite, suite.tasks[task_id]))
    return {m.id: list(m.steps) for m in mutants}


def steps(data: list[dict[str, Any]]) -> list[Step]:
    return [Step.model_validate(step) for step in data]


def survivors(suite: Suite, task_id: str) -> set[str]:
    figures = mutation_test(Proof(suite, suite.tasks[task_id]))
    return {s.id for s in figures.survivors}


# --- the operators ---------------------------------------------------------------------------


def test_arg_mutants_use_other_valid_values_related_first(tmp_path: Path) -> None:
    mutants = mutants_of(shop(tmp_path), "refund")
    args = sorted(m for m in mutants if m.startswith("arg:"))
    assert args == sorted(
        [
            "arg:step6:refund_item.order_id=O-2",  # the same customer's other order first
            "arg:step6:refund_item.order_id=O-3",
            "arg:step6:refund_item.item_id=I-2",  # the same order's other item first
            "arg:step6:refund_item.item_id=I-3",
            "arg:step6:refund_item.payment_method_id=PM-C1-GIFT",
            "arg:step6:refund_item.payment_method_id=PM-C2-CARD",
            "arg:step6:refund_item.reason=unwanted",  # from the tool's schema
        ]
    )
    changed = mutants["arg:step6:refund_item.payment_method_id=PM-C2-CARD"]
    expected = steps(REFUND)
    expected[5] = Step(
        call="refund_item", args={**REFUND[5]["args"], "payment_method_id": "PM-C2-CARD"}
    )
    assert changed == expected
    # reads are never mutated by `arg`, nor are free-text arguments
    assert not any(m.startswith("arg:step2") for m in mutants)
    assert not any("email=" in m for m in mutants_of(shop(tmp_path), "email") if "arg:" in m)


def test_a_grader_that_ignores_the_payment_method_lets_the_arg_mutant_survive(
    tmp_path: Path,
) -> None:
    loose = validate_task(shop(tmp_path), "refund").check("mutation")
    assert not loose.passed
    assert (
        "arg:step6:refund_item.payment_method_id=PM-C2-CARD (step 6 calls refund_item with "
        'payment_method_id="PM-C2-CARD" instead of "PM-C1-CARD")' in loose.detail
    )
    assert "arg:step6:refund_item.reason=unwanted" in loose.detail
    strict = validate_task(shop(tmp_path, assertion=STRICT_REFUND), "refund")
    survived = {s.id for s in strict.mutation.survivors} if strict.mutation else set()
    assert not any(s.startswith("arg:") for s in survived), survived
    assert strict.mutation is not None and strict.mutation.per_class["arg"].killed == 6


def test_a_mutant_that_crashes_the_environment_is_an_error_not_a_kill(tmp_path: Path) -> None:
    suite = shop(tmp_path, assertion=STRICT_REFUND)
    figures = mutation_test(Proof(suite, suite.tasks["refund"]))
    [errored] = figures.errored
    assert errored.id == "arg:step6:refund_item.payment_method_id=PM-C1-GIFT"
    assert errored.reason is not None and errored.reason.startswith("environment_failure")
    assert figures.errors == 1 and figures.per_class["arg"].errors == 1
    assert figures.killed + figures.errors + len(figures.survivors) == figures.generated
    # the extra calls the strict shop refuses change nothing: equivalent, out of the score
    assert figures.equivalent == sum(s.equivalent is not None for s in figures.survivors)
    from groundstate.validation.mutation import REFUSED_EXTRA

    refused = [s for s in figures.survivors if s.equivalent == REFUSED_EXTRA]
    assert refused and all(s.id.startswith("extra:") for s in refused)
    assert figures.score == figures.killed / (figures.generated - figures.equivalent)


def test_drop_and_move_only_touch_steps_that_guard_a_write(tmp_path: Path) -> None:
    mutants = mutants_of(shop(tmp_path), "refund")
    dropped = sorted(m for m in mutants if m.startswith("drop:"))
    assert dropped == [
        "drop:step1:say",
        "drop:step2:verify",
        "drop:step3:get_customer",
        "drop:step4:get_order",
        "drop:step5:say",
    ]
    base = steps(REFUND)
    assert mutants["move:step2:verify"] == [base[0], *base[2:6], base[1], base[6]]
    assert mutants["move:step5:say"] == [*base[:4], base[5], base[4], base[6]]
    # the guard is checked by a constraint: leaving it out or late is killed
    left = survivors(shop(tmp_path), "refund")
    assert "drop:step2:verify" not in left and "move:step2:verify" not in left
    assert "drop:step3:get_customer" in left  # nothing asks for that read


def test_confirmations_are_made_to_name_other_values(tmp_path: Path) -> None:
    mutants = mutants_of(shop(tmp_path), "refund")
    confirm = {m: s[4].say for m, s in mutants.items() if m.startswith("confirm:")}
    assert confirm["confirm:step5:O-1=O-2"] == CONFIRM.replace("O-1", "O-2")
    assert confirm["confirm:step5:I-1=I-2"] == CONFIRM.replace("I-1", "I-2")
    assert confirm["confirm:step5:25.00=40.00"] == CONFIRM.replace("25.00", "40.00")
    assert confirm["confirm:step5:damaged=unwanted"] == CONFIRM.replace("damaged", "unwanted")
    # the card is named by its label, a text no other payment method has
    gift = CONFIRM.replace("Visa ending 1111", "Gift card ending 2222")
    assert confirm["confirm:step5:Visa ending 1111=Gift card ending 2222"] == gift
    assert confirm["confirm:step5:blanket"] == BLANKET
    for mutant in confirm:  # the calls are the oracle's
        assert [s for s in mutants[mutant] if s.call] == [s for s in steps(REFUND) if s.call]
    # the first message asks for facts, not for a confirmation of the refund
    assert not any(m.startswith("confirm:step1") for m in mutants)


def test_a_constraint_on_what_was_confirmed_kills_that_confirm_mutant(tmp_path: Path) -> None:
    named_card = {
        "id": "card-named",
        "before": {
            "first": {"message": "agent", "contains": "Visa ending 1111"},
            "then": {"tool": "refund_item"},
        },
    }
    left = survivors(shop(tmp_path, constraints=(VERIFIED_FIRST, named_card)), "refund")
    assert "confirm:step5:Visa ending 1111=Gift card ending 2222" not in left
    assert "confirm:step5:blanket" not in left
    assert "confirm:step5:O-1=O-2" in left  # nothing binds the order's id


def test_provenance_takes_a_user_only_value_from_a_read_instead(tmp_path: Path) -> None:
    mutants = mutants_of(shop(tmp_path), "refund")
    base = steps(REFUND)
    # the question is left out and the profile read, which shows both facts, moved first
    taken = [base[2], base[1], *base[3:]]
    provenance = {m for m in mutants if m.startswith("provenance:")}
    assert provenance == {"provenance:step2:verify.email"}  # zip_code: the same trajectory
    assert mutants["provenance:step2:verify.email"] == taken
    knows_zip = {
        "id": "user-gave-zip",
        "before": {
            "first": {"message": "user", "contains": "my zip code is"},
            "then": {"tool": "verify"},
        },
    }
    killing = shop(tmp_path, constraints=(VERIFIED_FIRST, knows_zip))
    assert "provenance:step2:verify.email" not in survivors(killing, "refund")


def test_undo_writes_someone_elses_record_and_restores_it(tmp_path: Path) -> None:
    mutants = mutants_of(shop(tmp_path), "email")
    base = steps(EMAIL)
    write = Step(call="update_email", args={"customer_id": "C2", "email": "ada@new.example"})
    restore = Step(call="update_email", args={"customer_id": "C2", "email": "bo@example.com"})
    assert mutants["undo:step4:update_email.customer_id=C2"] == [
        *base[:3],
        write,
        restore,
        *base[3:],
    ]
    # only the net change is graded: the forbidden write, undone, goes unseen
    assert "undo:step4:update_email.customer_id=C2" in survivors(shop(tmp_path), "email")
    # a refund cannot be undone by refund_item: no undo mutant, and the report says 0
    suite = shop(tmp_path)
    refund = mutation_test(Proof(suite, suite.tasks["refund"]))
    assert refund.per_class["undo"].generated == 0
    assert "undo 0/0" in mutation_module.summary(refund)


def test_undo_falls_back_to_the_same_row_when_no_other_record_can_be_restored(
    tmp_path: Path,
) -> None:
    suite = shop(tmp_path)
    only_ada = SHOP_SQL.replace(
        ",\n                             ('C2', 'Bo', 'bo@example.com', '22222')", ""
    )
    assert only_ada != SHOP_SQL
    (suite.root / "fixtures" / "shop.sql").write_text(only_ada)
    mutants = mutants_of(load_suite(suite.root), "email")
    base = steps(EMAIL)
    restore = Step(call="update_email", args={"customer_id": "C1", "email": "ada@example.com"})
    assert [m for m in mutants if m.startswith("undo:")] == ["undo:step4:update_email:same-row"]
    assert mutants["undo:step4:update_email:same-row"] == [*base[:3], base[3], restore, *base[3:]]


def test_repeat_and_false_claim(tmp_path: Path) -> None:
    mutants = mutants_of(shop(tmp_path), "refund")
    base = steps(REFUND)
    assert mutants["repeat:step6:refund_item"] == [*base[:6], base[5], base[6]]
    assert mutants["false_claim:finish"] == [*base[:6], Step(finish=CLAIM_NOTHING_DONE)]
    # the tool refuses the second refund, so the repeat changes nothing and survives; no
    # assertion reads the final reply, so the false claim survives too
    left = survivors(shop(tmp_path, assertion=STRICT_REFUND), "refund")
    assert {"repeat:step6:refund_item", "false_claim:finish"} <= left


def test_false_claim_of_an_oracle_that_changes_nothing(tmp_path: Path) -> None:
    refuse = [{"say": ASK}, {"finish": "I cannot refund that item."}]
    no_refund = {"id": "no-refund", "sql": "SELECT count(*) FROM refunds", "expect_rows": [[0]]}
    mutants = mutants_of(shop(tmp_path, refund=refuse, assertion=no_refund), "refund")
    assert list(mutants) == ["false_claim:finish"]  # no write: nothing else to mutate
    assert mutants["false_claim:finish"] == [Step(say=ASK), Step(finish=CLAIM_DONE)]


def test_identical_mutants_are_replayed_once(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    mutants, distinct = generate(Proof(load_suite(root), load_suite(root).tasks["transfer"]))
    keys = [json.dumps([s.model_dump() for s in m.steps]) for m in mutants]
    assert len(set(keys)) == len(keys) == distinct
    # taking the PIN from nowhere is the same trajectory as not asking for it: one mutant
    ids = {m.id for m in mutants}
    assert "drop:step1:say" in ids and not any(i.startswith("provenance:") for i in ids)
    assert all(m.mutant_class in CLASSES for m in mutants)


def test_the_cap_takes_every_operator_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mutation_module, "MAX_MUTANTS", 5)
    root = bank_copy(tmp_path)
    figures = mutation_test(Proof(load_suite(root), load_suite(root).tasks["transfer"]))
    assert figures.generated == 5 and figures.candidates == 16
    made = {name for name, counts in figures.per_class.items() if counts.generated}
    assert made == {"arg", "drop", "move", "repeat", "extra"}
    assert "capped: 5 of 16 distinct mutants replayed" in mutation_module.summary(figures)


# --- the check -------------------------------------------------------------------------------


def bank_with(tmp_path: Path, mode: str, equivalents: list[dict[str, str]] | None = None) -> Suite:
    root = bank_copy(tmp_path)
    config = yaml.safe_load((root / "suite.yaml").read_text())
    (root / "suite.yaml").write_text(yaml.safe_dump({**config, "mutation_testing": mode}))
    if equivalents is not None:
        task_file = root / "tasks" / "transfer.yaml"
        task = yaml.safe_load(task_file.read_text())
        task_file.write_text(yaml.safe_dump({**task, "equivalent_mutants": equivalents}))
    return load_suite(root)


BANK_SURVIVORS = ["drop:step1:say", "move:step1:say", "false_claim:finish"]


def test_survivors_fail_the_task_unless_declared_equivalent(tmp_path: Path) -> None:
    validity = validate_task(bank_with(tmp_path, "required"), "transfer")
    check = validity.check("mutation")
    assert not check.passed and not validity.valid
    assert check.detail.startswith("score 0.81: 13 of 16 mutants killed, 0 without a verdict")
    assert "3 surviving mutants: drop:step1:say (step 1, message" in check.detail
    assert validity.mutation is not None
    assert [s.id for s in validity.mutation.survivors] == BANK_SURVIVORS
    assert validity.mutation.per_class["arg"].model_dump() == {
        "generated": 6,
        "killed": 6,
        "errors": 0,
        "survived": 0,
    }
    reason = "the PIN check itself proves the customer knows the PIN"
    declared = [{"mutant": m, "reason": reason} for m in BANK_SURVIVORS]
    equivalent = validate_task(bank_with(tmp_path, "required", declared), "transfer")
    assert equivalent.check("mutation").passed
    assert f"declared equivalent: drop:step1:say ({reason})" in equivalent.check("mutation").detail
    assert equivalent.mutation is not None and equivalent.mutation.undeclared == []
    # The score leaves declared equivalents out of the denominator: 13 of 16 - 3.
    assert (equivalent.mutation.equivalent, equivalent.mutation.score) == (3, 1.0)
    assert "13 of 16 mutants killed, 3 declared equivalent" in equivalent.check("mutation").detail


def test_a_declared_equivalent_that_no_longer_survives_is_stale(tmp_path: Path) -> None:
    declared = [
        {"mutant": m, "reason": "declared"}
        for m in [*BANK_SURVIVORS, "arg:step3:transfer.amount=31", "arg:step9:gone=1"]
    ]
    check = validate_task(bank_with(tmp_path, "required", declared), "transfer").check("mutation")
    assert check.passed  # stale declarations warn, they do not fail
    assert (
        "warning: declared equivalent but no longer surviving (remove from equivalent_mutants): "
        "arg:step3:transfer.amount=31, arg:step9:gone=1"
    ) in check.detail


def test_the_suite_switch(tmp_path: Path) -> None:
    report = validate_task(bank_with(tmp_path, "report"), "transfer")
    assert report.check("mutation").passed and report.valid
    assert "not failed: the suite sets mutation_testing: report" in report.check("mutation").detail
    assert report.mutation is not None and len(report.mutation.survivors) == 3
    off = validate_task(bank_with(tmp_path, "off"), "transfer")
    assert off.check("mutation").passed and off.mutation is None
    assert off.check("mutation").detail == "off (the suite sets mutation_testing: off)"
    keys = {
        validation_key(suite, suite.tasks["transfer"])
        for suite in (bank_with(tmp_path, mode) for mode in ("required", "report", "off"))
    }
    assert len(keys) == 3


def test_the_switch_reads_a_bare_off_and_names_the_field_of_a_wrong_value(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    config = (root / "suite.yaml").read_text().replace("mutation_testing: report", "")
    (root / "suite.yaml").write_text(config + "mutation_testing: off\n")  # YAML 1.1: false
    assert load_suite(root).config.mutation_testing == "off"
    (root / "suite.yaml").write_text(config + "mutation_testing: strict\n")
    result = CliRunner().invoke(main, ["validate", str(root), "--no-cache"])
    assert result.exit_code == 2
    assert re.search(
        r"suite.yaml:\d+: mutation_testing: Input should be 'required', 'report' or 'off'",
        result.stderr,
    )


def test_an_oracle_that_fails_has_no_mutants_to_prove_anything(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    wrong = [
        *ORACLE[:2],
        {"call": "transfer", "args": {"source": "A", "target": "C", "amount": 30}},
    ]
    write_solution(root, "oracle", {"kind": "oracle", "steps": wrong})
    check = validate_task(load_suite(root), "transfer").check("mutation")
    assert not check.passed and check.detail == "oracle does not pass, so its mutants prove nothing"


def test_mutants_equal_to_an_alternative_route_are_not_generated(tmp_path: Path) -> None:
    root = bank_copy(tmp_path)
    without_question = ORACLE[1:]  # the same trajectory as the mutant drop:step1:say
    write_solution(root, "alt_no_question", {"kind": "alternative", "steps": without_question})
    mutants, _ = generate(Proof(load_suite(root), load_suite(root).tasks["transfer"]))
    assert "drop:step1:say" not in {m.id for m in mutants}


# --- records, cache, command line ------------------------------------------------------------


def test_figures_survive_the_validity_cache(tmp_path: Path) -> None:
    suite = bank_with(tmp_path, "report")
    with RunStore(tmp_path / "runs.db") as store:
        first = ensure_valid(suite, store)["transfer"]
        again = ensure_valid(load_suite(suite.root), store)["transfer"]
    assert again == first and again.mutation is not None
    assert again.mutation.score == 0.8125
    assert TaskValidity.from_dict(json.loads(json.dumps(first.to_dict()))) == first


def test_an_old_cache_entry_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from groundstate.validation import suite as suite_validation

    suite = bank_with(tmp_path, "report")
    key = validation_key(suite, suite.tasks["transfer"])
    monkeypatch.setattr(suite_validation, "VALIDATOR_REVISION", 1)
    assert validation_key(suite, suite.tasks["transfer"]) != key
    # and a record without mutation figures still reads back
    old = {"task_id": "transfer", "valid": True, "checks": []}
    assert TaskValidity.from_dict(old).mutation is None


def test_validate_json_and_text_report_the_mutation_figures(tmp_path: Path) -> None:
    suite = bank_with(tmp_path, "required")
    result = CliRunner().invoke(main, ["validate", str(suite.root), "--json", "--no-cache"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    [task] = data["tasks"]
    mutation = task["mutation"]
    assert (mutation["generated"], mutation["killed"], mutation["errors"]) == (16, 13, 0)
    assert mutation["score"] == 0.8125
    assert mutation["survivors"][0] == {
        "id": "drop:step1:say",
        "class": "drop",
        "description": 'step 1, message "What is your PIN?", left out',
        "equivalent": None,
        "reason": None,
    }
    assert list(mutation["per_class"]) == list(CLASSES)
    assert data["mutation"]["score"] == 0.8125
    assert data["mutation"]["per_class"]["arg"] == {
        "generated": 6,
        "killed": 6,
        "errors": 0,
        "survived": 0,
    }
    text = CliRunner().invoke(main, ["validate", str(suite.root), "--no-cache"]).stdout
    assert re.search(r"transfer +pass +pass +pass +pass +pass +pass +FAIL", text), text
    assert "transfer · mutation (FAIL): score 0.81: 13 of 16 mutants killed" in text
    assert (
        '  survives move:step1:say: step 1, message "What is your PIN?", moved after step 3 '
        "(transfer), so it no longer comes before it\n"
    ) in text
    assert "suite mutation score 0.81: 13 of 16 mutants killed" in text
    reported = CliRunner().invoke(
        main, ["validate", str(bank_with(tmp_path, "report").root), "--no-cache"]
    )
    assert reported.exit_code == 0
    assert re.search(r"transfer +pass +pass +pass +pass +pass +pass +81%", reported.stdout)


# --- fixture values and the example suite ----------------------------------------------------


def shop_values(tmp_path: Path) -> FixtureValues:
    suite = shop(tmp_path)
    fixture = suite.root / "fixtures" / "shop.sql"
    with SqliteEnvironment(fixture, clock=suite.tasks["refund"].clock) as env:
        return FixtureValues(env.snapshot())


def test_fixture_values(tmp_path: Path) -> None:
    values = shop_values(tmp_path)
    assert values.is_id("O-1", "order_id") and not values.is_id("Ada", "name")
    assert values.other_ids("PM-C1-CARD", "payment_method_id") == ["PM-C1-GIFT", "PM-C2-CARD"]
    assert values.other_numbers(2500) == [4000]  # the other value of the column holding it
    assert values.other_numbers(30) == [29, 31]  # a number no column holds: its neighbours
    # a small number is an id only under the name of its table's key
    assert not values.is_id(1, "amount") and not values.is_id(1, "refund_id")
    assert values.renamings("PM-C1-CARD", "PM-C2-CARD", "payment_method_id") == [
        ("Visa ending 1111", "Visa ending 3333")
    ]
    # statuses and other shared texts do not name a row
    assert values.renamings("I-1", "I-3", "item_id") == []


def test_every_operator_generates_mutants_on_the_retail_suite() -> None:
    retail = load_suite(EXAMPLES / "retail")
    made: dict[str, int] = dict.fromkeys(CLASSES, 0)
    for task in retail.tasks.values():
        for mutant in generate(Proof(retail, task))[0]:
            made[mutant.mutant_class] += 1
    assert all(made.values()), made


# --- respell: known-bad solutions must keep failing however their messages are spelled -------

LEAK = "Your card number is 4111 1111 1111 1111."
NO_CARD_NUMBER = {"id": "no-card-number", "never": {"message": "agent", "matches": r"\d{16}"}}
NAIVE_CHECK = {"id": "no-card-number", "check": "checks.py:no_card_number"}
NAIVE = '''
def no_card_number(trace, s0):
    """A naive check: a plain substring, as written in the policy."""
    texts = [e.text or "" for e in trace if e.kind == "message" and e.role == "agent"]
    return not any("4111 1111 1111 1111" in text for text in texts)
'''


def _leaky_shop(tmp_path: Path, constraint: dict[str, Any]) -> Suite:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "checks.py").write_text(NAIVE)
    suite = shop(tmp_path, constraints=(VERIFIED_FIRST, constraint))
    leak = {
        "kind": "known_bad",
        "fails_by": "constraint:no-card-number",
        "steps": [*REFUND[:-1], {"finish": LEAK}],
    }
    (suite.root / "solutions" / "refund" / "bad_leak.yaml").write_text(yaml.safe_dump(leak))
    return load_suite(suite.root)


def test_respelled_known_bad_messages_survive_a_naive_substring_check(tmp_path: Path) -> None:
    suite = _leaky_shop(tmp_path, NAIVE_CHECK)
    respelled = {m: s for m, s in mutants_of(suite, "refund").items() if m.startswith("respell")}
    assert respelled["respell:bad_leak:digits-dashed"][-1].finish == (
        "Your card number is 4111-1111-1111-1111."
    )
    assert respelled["respell:bad_leak:digits-joined"][-1].finish == (
        "Your card number is 4111111111111111."
    )
    alive = survivors(suite, "refund")
    assert {"respell:bad_leak:digits-dashed", "respell:bad_leak:digits-joined"} <= alive
    assert "respell:bad_leak:digits-spaced" not in respelled  # the same text: not a mutant


def test_a_normalised_message_constraint_kills_every_respelling(tmp_path: Path) -> None:
    suite = _leaky_shop(tmp_path, NO_CARD_NUMBER)
    figures = mutation_test(Proof(suite, suite.tasks["refund"]))
    respell = figures.per_class["respell"]
    assert respell.generated >= 3 and respell.killed == respell.generated
    assert not [s for s in figures.survivors if s.mutant_class == "respell"]

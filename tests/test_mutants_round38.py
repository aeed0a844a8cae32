"""Round 38: the ``extra`` near miss (the asked change plus an unasked change of another record),
and the retail example's surviving near misses.

Before this round no operator made a trajectory that does everything the oracle does *and* also
changes a record nobody asked about (``arg`` replaces the record, ``undo`` puts it back): a
grader that checks only the asked row passed an agent that also refunded the neighbouring item.
"""

from __future__ import annotations

from pathlib import Path

from groundstate.spec.canonical import canonical_json
from groundstate.spec.solution import Step
from groundstate.spec.suite import load_suite
from groundstate.validation.mutation import generate, mutation_test
from groundstate.validation.replay import Proof

from .conftest import EXAMPLES
from .test_mutation import REFUND, STRICT_REFUND, mutants_of, shop, steps, survivors

ONLY_I1 = {
    "id": "refunded",
    "sql": "SELECT status FROM items WHERE item_id = 'I-1'",
    "expect_rows": [["refunded"]],
}
"""A grader that looks at the asked row alone."""


def test_extra_adds_an_unasked_write_of_another_record_after_each_write(tmp_path: Path) -> None:
    mutants = mutants_of(shop(tmp_path), "refund")
    extra = sorted(m for m in mutants if m.startswith("extra:"))
    assert extra == [
        "extra:step6:refund_item.item_id=I-2",  # the same order's other item first
        "extra:step6:refund_item.item_id=I-3",
        "extra:step6:refund_item.order_id=O-2",
        "extra:step6:refund_item.order_id=O-3",
        "extra:step6:refund_item.payment_method_id=PM-C1-GIFT",
        "extra:step6:refund_item.payment_method_id=PM-C2-CARD",
    ]
    base = steps(REFUND)
    also = Step(call="refund_item", args={**REFUND[5]["args"], "item_id": "I-2"})
    # the oracle's trajectory, untouched, with the unasked write right after the asked one
    assert mutants["extra:step6:refund_item.item_id=I-2"] == [*base[:6], also, base[6]]
    # enums and free text name no record: no extra write of them
    assert not any("reason=" in m for m in extra)
    assert [m for m in mutants_of(shop(tmp_path), "email") if m.startswith("extra:")] == [
        "extra:step4:update_email.customer_id=C2"
    ]


def test_a_grader_that_checks_only_the_asked_row_lets_the_extra_write_survive(
    tmp_path: Path,
) -> None:
    loose = survivors(shop(tmp_path, assertion=ONLY_I1), "refund")
    # refunding I-2 as well passes a grader that looks at I-1 alone ...
    assert "extra:step6:refund_item.item_id=I-2" in loose
    # ... and no older operator shows it: refunding I-2 *instead* fails the same grader
    assert "arg:step6:refund_item.item_id=I-2" not in loose
    assert "undo:step6:refund_item.item_id=I-2" not in loose
    # a grader that pins the whole change (no other row changed) kills it
    strict = survivors(shop(tmp_path, assertion=STRICT_REFUND), "refund")
    assert "extra:step6:refund_item.item_id=I-2" not in strict


def test_extra_never_makes_a_write_the_oracle_makes_itself() -> None:
    # move-everything updates O-1009 and then O-1011 with the same address: "also" updating
    # the other one is a change the customer asked for (a repeat at most), not an unasked one
    suite = load_suite(EXAMPLES / "retail")
    task = suite.tasks["move-everything"]
    mutants, _ = generate(Proof(suite, task))
    oracle = suite.solutions["move-everything"]["oracle"].steps
    made = {canonical_json([s.call, s.args]) for s in oracle if s.call is not None}
    extra = [m for m in mutants if m.mutant_class == "extra"]
    assert extra, "the oracle's three writes have other records to write"
    for mutant in extra:
        added = [s for s in mutant.steps if s.call is not None]
        unasked = [s for s in added if canonical_json([s.call, s.args]) not in made]
        assert len(unasked) == 1, mutant.id
    ids = {m.id for m in extra}
    assert "extra:step7:update_order_address.order_id=O-1009" not in ids
    assert "extra:step6:update_order_address.order_id=O-1011" not in ids
    assert "extra:step6:update_order_address.order_id=O-1010" in ids  # the delivered order


def test_retail_graders_kill_every_extra_write_and_only_idempotent_repeats_survive() -> None:
    suite = load_suite(EXAMPLES / "retail")
    figures = mutation_test(Proof(suite, suite.tasks["move-everything"]))
    assert figures.per_class["extra"].generated > 0
    assert figures.per_class["extra"].killed == figures.per_class["extra"].generated
    # the survivors are the address updates made twice with the same values, each declared
    # equivalent with its reason (no value changes, no rule forbids it)
    assert figures.undeclared == []
    assert {s.mutant_class for s in figures.survivors} == {"repeat"}
    assert all("update_" in s.id and "address" in s.id for s in figures.survivors)

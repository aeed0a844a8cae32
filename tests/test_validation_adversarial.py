"""Adversarial task validation: subtly invalid tasks an outside team would write, each of which
``groundstate validate`` must flag, and near misses its mutation testing must make.

The ``asks`` mutants: a confirmation that names the same values but asks about another kind of
change (``confirmed.asks`` in docs/constraints.md) must fail a grader that binds the kind, and
survive one that does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from groundstate.spec.solution import Step

from .test_mutation import CONFIRM, REFUND, VERIFIED_FIRST, mutants_of, shop, survivors


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

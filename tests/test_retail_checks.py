"""The retail suite's own checks, made cheaper without changing a verdict: the record naming
(only_known_records) finds exactly what one alternative per name, longest first, finds; the
"nothing else changed" checks read the grader's diff (``sT.changes()``) and say what two whole
snapshots would say."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.grading.outcome import States, within_limit
from groundstate.tools import load_module

RETAIL = Path(__file__).parent.parent / "examples" / "retail"
CHECKS = load_module(RETAIL / "checks.py", "checks")
# Few letters, both cases, the separators the boundaries care about: names that share prefixes,
# differ only in case, or fit inside one another at one place ("ab" and "AB c").
CHARS = "aAbB1- ."
names_st = st.frozensets(st.text(CHARS, min_size=1, max_size=5), max_size=8)


def _longest_first(names: frozenset[str]) -> re.Pattern[str]:
    options = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # Exact: the caller folds names and text (casefolded among the rest) before searching.
    return re.compile(rf"(?<![\w-])(?:{options})(?![\w-])")


def _found(pattern: re.Pattern[str], text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group()) for m in pattern.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(names=names_st, words=st.lists(st.text(CHARS, max_size=6), max_size=6))
def test_the_prefix_tree_finds_what_longest_first_finds(
    names: frozenset[str], words: list[str]
) -> None:
    text = " ".join(words + sorted(names))  # each name at least once, among near misses
    assert _found(CHECKS._naming(names), text) == _found(_longest_first(names), text)


def test_the_longest_whole_name_wins_where_a_shorter_one_fits_too() -> None:
    names = frozenset({"ab", "ab c", "o-1001", "o-10011"})
    found = CHECKS._naming(names).findall("ab c, o-10011 and o-1001x and ab")
    assert found == ["ab c", "o-10011", "ab"]


def test_non_ascii_names_keep_one_alternative_each() -> None:
    names = frozenset({"Straße", "STRASSE", "Café"})
    text = "straße café strasse"
    assert _found(CHECKS._naming(names), text) == _found(_longest_first(names), text)


@pytest.fixture
def env() -> Iterator[SqliteEnvironment]:
    clock = datetime(2025, 6, 16, 15, tzinfo=UTC)
    with SqliteEnvironment(RETAIL / "fixtures" / "retail.sql", clock=clock) as environment:
        environment.reset()
        yield environment


OFFICE = (
    "ship_line1 = '200 W Adams Street', ship_line2 = 'Suite 1400', ship_city = 'Chicago',"
    " ship_state = 'IL', ship_zip = '60606'"
)
CHANGES = {
    "the address alone": [f"UPDATE orders SET {OFFICE} WHERE order_id = 'O-1009'"],
    "and another order": [
        f"UPDATE orders SET {OFFICE} WHERE order_id = 'O-1009'",
        "UPDATE orders SET ship_zip = '00000' WHERE order_id = 'O-1011'",
    ],
    "and a refund added": [
        f"UPDATE orders SET {OFFICE} WHERE order_id = 'O-1009'",
        "INSERT INTO refunds (order_id, item_id, amount_cents, payment_method_id, created_at)"
        " VALUES ('O-1009', 'I-1009-1', 1, 'PM-C04-VISA', '2025-06-16')",
    ],
    "and a row removed": [
        f"UPDATE orders SET {OFFICE} WHERE order_id = 'O-1009'",
        "DELETE FROM store_credits",
    ],
}


@pytest.mark.parametrize("label", list(CHANGES))
@pytest.mark.parametrize("check", ["jacket_order_ships_to_office", "samuel_nothing_else_changed"])
def test_the_graders_diff_gives_the_verdict_two_snapshots_give(
    env: SqliteEnvironment, label: str, check: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for sql in CHANGES[label]:
        with env.tool_transaction():
            env.agent_db.execute(sql)
    s0, sT = env.initial_view(), env.evaluator_view()
    function = getattr(CHECKS, check)
    plain = function(s0, sT)  # plain views: both states read and compared
    states = States(s0, sT, s0.snapshot(), env.diff_from_initial(), RETAIL)

    def unread(*states: object) -> None:
        raise AssertionError("the graded check compared two snapshots")

    monkeypatch.setattr(CHECKS, "diff_snapshots", unread)
    graded = within_limit(lambda s: function(s.s0, s.sT), states, 5, "check")
    assert graded == plain
    assert plain[0] is (label == "the address alone" and check.startswith("jacket"))

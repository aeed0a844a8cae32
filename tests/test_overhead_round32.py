"""Round 32: the trace copies lent to Python checks read their parts' reference counts once
per check, against the counts the copy had when it was made or last given back (not when
the check began). Pinned here: what the lending protects (a check's edits reach neither the
record nor the next check; a copy someone still holds is never lent again), including a
reference taken *between* two checks, which the old per-check baseline counted as the copy's
own and so lent the copy on while its holder could still edit it."""

from __future__ import annotations

import pickle
import weakref
from typing import Any

import pytest

from groundstate.copies import Guard
from groundstate.trace import TraceCopies

from .test_overhead_round19 import _trace


def _taken_between(copies: TraceCopies[Any], take: Any) -> Any:
    """What *take* holds of the copy given back, taken while no check runs (as a thread
    still running from an earlier check, or one that found it through ``gc``, would)."""
    spare = copies._spare
    assert spare is not None
    guard = spare[0] if isinstance(spare, tuple) else spare  # (the old code kept the guard)
    return take(guard.value)


@pytest.mark.parametrize(
    "take",
    [
        lambda t: t,
        lambda t: t[1],
        lambda t: t[1].__dict__,
        lambda t: weakref.ref(t[1]),
    ],
    ids=["the list", "an event", "an event's fields", "a weak reference"],
)
def test_a_copy_someone_took_hold_of_between_checks_is_not_lent_again(take: Any) -> None:
    events = _trace()
    copies = TraceCopies(events)
    fresh = pickle.dumps(copies.fresh())
    first = copies.lend(id)
    held = _taken_between(copies, take)
    assert copies.lend(id) == first  # untouched as yet: lent (its guard proves it)
    # The holder may edit it at any time from here: the copy is not given back again.
    assert copies._spare is None
    seen = copies.lend(lambda t: (id(t), pickle.dumps(t)))
    assert seen[0] != first and seen[1] == fresh
    del held


def test_an_edit_by_whoever_held_it_never_reaches_a_later_check_nor_the_record() -> None:
    events = _trace()
    recorded = pickle.dumps(events)
    copies = TraceCopies(events)
    fresh = pickle.dumps(copies.fresh())
    copies.lend(id)
    event = _taken_between(copies, lambda t: t[0])
    for n in range(3):
        assert copies.lend(pickle.dumps) == fresh
        event.text = f"edited {n}"  # meanwhile, between checks and during them
    assert pickle.dumps(events) == recorded


def test_checks_that_only_read_share_one_copy_reading_the_counts_once_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[int] = []
    count = Guard.references

    def counted(self: Guard[Any]) -> list[int]:
        reads.append(1)
        return count(self)

    monkeypatch.setattr(Guard, "references", counted)
    copies = TraceCopies(_trace())
    first = copies.lend(id)
    assert [copies.lend(id) for _ in range(5)] == [first] * 5  # lent, not copied
    assert len(reads) == 1 + 6  # the new copy's, then one after each check


def test_a_check_editing_or_keeping_its_copy_gets_the_next_check_a_fresh_one() -> None:
    events = _trace()
    recorded = pickle.dumps(events)
    copies = TraceCopies(events)
    fresh = pickle.dumps(copies.fresh())
    kept = copies.lend(lambda t: t[2])  # returned: a part the check's caller still holds
    assert copies._spare is None
    copies.lend(lambda t: t[0].__setattr__("text", "edited"))
    assert copies.lend(pickle.dumps) == fresh
    assert copies.lend(pickle.dumps) == fresh
    assert pickle.dumps(events) == recorded
    del kept

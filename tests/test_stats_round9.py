"""Statistics audit, ninth round: what an outside re-computation found (docs/statistics.md)."""

from __future__ import annotations

import pytest

from groundstate.stats import Outcome, compare, summarize, task_counts


def five_tasks(*extra: Outcome) -> list[Outcome]:
    return [Outcome(f"t{i}", a, (i + a) % 2 == 0) for i in range(5) for a in range(2)] + list(extra)


@pytest.mark.parametrize(
    "repeat",
    [
        # an imported row given twice
        Outcome("t1", 0, False),
        # an invalid try and its rerun given as two outcomes of one attempt
        Outcome("t3", 1, False, valid=False, terminal_reason="environment_failure"),
    ],
)
def test_an_attempt_given_twice_is_refused_by_name_not_counted_twice(repeat: Outcome) -> None:
    records = five_tasks(repeat)
    name = f"'{repeat.task_id}' attempt {repeat.attempt} (2x)"
    for count in (
        lambda: summarize(records, n_boot=10),
        lambda: task_counts(records, "strict"),
        lambda: compare(records, five_tasks(), n_boot=10),
        lambda: compare(five_tasks(), records, n_boot=10),
    ):
        with pytest.raises(ValueError, match="given more than once") as raised:
            count()
        assert name in str(raised.value)
    # one outcome per attempt: counted as given
    assert summarize(five_tasks(), n_boot=10).views["strict"].success_rate.attempts == 10

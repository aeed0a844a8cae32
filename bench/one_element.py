"""What a ``before`` costs whose names are captured through one ``*`` (prints figures; not a test).

``before: {first: {capture: {item: output.items.*.id, qty: output.items.*.qty}}, where:
{args.item: $item, args.qty: $qty}}`` is met by one listed element (forty-fourth round). The
forty-fifth round looks each name's candidates up by their element instead of trying every
pair, so the check grows with the list, not with its square. Printed for lists of several
lengths where half the elements are candidates for each name and no element for both (the
pairwise search's worst case: a refund of I-1 at quantity 2 against a list of I-1 at 1 and
I-2 at 2), and for lists of distinct items.

CPU of this process (``time.process_time``), median of several rounds.

Run: ``.venv/bin/python bench/one_element.py``.
"""

from __future__ import annotations

import statistics
import time

from pydantic import TypeAdapter

from groundstate.grading.constraints import evaluate_constraints
from groundstate.spec.constraints import HardConstraint
from groundstate.trace import ToolCallEvent

RULE = TypeAdapter(HardConstraint).validate_python(
    {
        "id": "b",
        "before": {
            "first": {
                "tool": "get_order",
                "capture": {"item": "output.items.*.id", "qty": "output.items.*.qty"},
            },
            "then": {"tool": "refund"},
            "where": {"args.item": "$item", "args.qty": "$qty"},
        },
    }
)


def _call(step: int, tool: str, args: dict[str, object], output: object) -> ToolCallEvent:
    return ToolCallEvent(
        step=step, tool=tool, args=args, ok=True, output=output, error=None, error_class=None,
        duration_ms=1.0, writes=[], changed_tables=[], at=0.0,
    )  # fmt: skip


def _seconds(n: int, crossed: bool) -> float:
    if crossed:
        items = [{"id": f"I-{1 + 2 * i // n}", "qty": 1 + 2 * i // n} for i in range(n)]
        args = {"item": "I-1", "qty": 2}
    else:
        items = [{"id": f"I-{i}", "qty": i} for i in range(n)]
        args = {"item": f"I-{n - 1}", "qty": n - 1}
    read = _call(0, "get_order", {"order_id": "O-1"}, {"items": items})
    refund = _call(1, "refund", args, None)
    rounds = []
    for _ in range(5):
        start = time.process_time()
        evaluate_constraints([RULE], [read, refund])
        rounds.append(time.process_time() - start)
    return statistics.median(rounds)


def main() -> None:
    print("items   crossed halves (s)   distinct items (s)")
    for n in (100, 1_000, 4_000):
        print(f"{n:>6}   {_seconds(n, True):>18.4f}   {_seconds(n, False):>18.4f}")


if __name__ == "__main__":
    main()

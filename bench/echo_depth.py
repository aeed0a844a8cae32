"""What the echo check costs for deeply nested arguments echoed back (prints figures; not a test).

A call whose arguments respell the value a ``never`` names (``id: acc-1`` for ``ACC-1``) is
judged by what its output shows: a value repeated under the name of an argument holding it
is that argument's echo (``_spelling.shown``). Until the forty-sixth round every value's
path was spelt out as a tuple, so the check grew with what the call holds times how deep
it is nested (a 20,000-leaf echo nested 300 deep: 0.41 s); paths are now numbered once as
they are read and matched from their ends by one automaton, so it grows with what the call
holds. Printed for an echo of ``leaves`` values nested ``depth`` deep (the arguments hold
the expected value at every leaf, and the output is ``{request: <the arguments>}``), and
for the same values spread over one level.

CPU of this process (``time.process_time``), median of several rounds.

Run: ``.venv/bin/python bench/echo_depth.py``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from pydantic import TypeAdapter

from groundstate.grading.constraints import evaluate_constraints
from groundstate.spec.constraints import HardConstraint
from groundstate.trace import ToolCallEvent

RULE = TypeAdapter(HardConstraint).validate_python(
    {"id": "n", "never": {"tool": "get_account", "where": {"args.id": "ACC-1"}}}
)


def _call(args: dict[str, Any], output: Any) -> ToolCallEvent:
    return ToolCallEvent(
        step=0, tool="get_account", args=args, ok=True, output=output, error=None,
        error_class=None, duration_ms=1.0, writes=[], changed_tables=[], at=0.0,
    )  # fmt: skip


def _seconds(leaves: int, depth: int) -> float:
    nested: Any = {f"k{i}": "ACC-1" for i in range(leaves)}
    for level in range(depth):
        nested = {f"a{level}": nested}
    args = {"id": "acc-1", "x": nested}
    call = _call(args, {"request": args})
    rounds = []
    for _ in range(3):
        start = time.process_time()
        evaluate_constraints([RULE], [call])
        rounds.append(time.process_time() - start)
    return statistics.median(rounds)


def main() -> None:
    print("leaves   depth   seconds")
    for leaves, depth in ((20_000, 1), (20_000, 30), (20_000, 300), (2_000, 450)):
        print(f"{leaves:>6}   {depth:>5}   {_seconds(leaves, depth):.4f}")


if __name__ == "__main__":
    main()

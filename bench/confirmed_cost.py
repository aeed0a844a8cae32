"""What the ``confirmed`` constraints cost per retail attempt (prints figures; not a test).

``confirmed`` is the largest piece of a grading pass (issue 10). Each trace of the golden
corpus (tests/golden/retail_grading.jsonl.gz: oracle and alternative replays, near-miss
mutants, the careful and hasty agents) gets a fresh trace index, as an attempt does, and
every ``confirmed`` constraint of its task that may select a step of it is evaluated on it
(a grading pass passes the others unevaluated); the process CPU of a whole
pass over the corpus (``time.process_time``, after one pass to warm the memos a process
keeps across attempts) is divided by the number of traces. The figure is the median of
several passes: the machine may be shared, and CPU moves less than wall time under load.

With ``--against OTHER/src`` the same measure runs in fresh processes on this tree's
sources and on *OTHER*'s, alternating, and both are printed side by side (medians over the
pairs): before and after figures taken in one run on the same machine load. The verdicts
both trees give are compared too (a speed change must move none).

Run: ``.venv/bin/python bench/confirmed_cost.py [--passes 5] [--against ../main/src --pairs 3]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the bench folder is no package (tests load this file by path)
    sys.path.insert(0, str(HERE))

import side_by_side  # noqa: E402


def measure(passes: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE.parent))
    from tests.grading_corpus import EXAMPLES, load_cases

    from groundstate.grading.constraints._dialogue import confirmed
    from groundstate.grading.constraints._index import TraceIndex
    from groundstate.spec.constraints import ConfirmedConstraint
    from groundstate.spec.suite import load_suite

    suite = load_suite(EXAMPLES / "retail")
    work = [
        (
            case.events,
            [
                c
                for c in suite.tasks[case.task_id].hard_process_constraints
                if isinstance(c, ConfirmedConstraint)
            ],
        )
        for case in load_cases()
    ]

    def one_pass() -> list[Any]:
        results: list[Any] = []
        for events, constraints in work:
            index = TraceIndex(list(events))
            for constraint in constraints:
                # as a grading pass does: a rule no step can select passes unevaluated
                if index.may_select(constraint.confirmed.change):
                    results.append(confirmed(constraint, index).model_dump(mode="json"))
        return results

    verdicts = one_pass()
    seconds = []
    for _ in range(passes):
        start = time.process_time()
        one_pass()
        seconds.append(time.process_time() - start)
    digest = hashlib.sha256(json.dumps(verdicts, sort_keys=True).encode()).hexdigest()
    return {
        "traces": len(work),
        "checks": len(verdicts),
        "failed": sum(not v["passed"] for v in verdicts),
        "ms_per_trace": statistics.median(seconds) * 1000 / len(work),
        "each": [s * 1000 / len(work) for s in seconds],
        "verdicts": digest,
    }


def _child(src: str, passes: int) -> dict[str, Any]:
    return side_by_side.child(__file__, src, "--passes", str(passes))


def compare(this: str, other: str, passes: int, pairs: int) -> None:
    runs = side_by_side.alternate(this, other, pairs, lambda src: _child(src, passes))
    first = runs[this][0]
    print(f"{first['traces']} traces, {first['checks']} confirmed checks per pass")
    print(f"medians of {pairs} alternating pairs; CPU ms per trace, all its confirmed checks")
    for src in (other, this):
        median = statistics.median(r["ms_per_trace"] for r in runs[src])
        each = ", ".join(f"{r['ms_per_trace']:.3f}" for r in runs[src])
        failed = runs[src][0]["failed"]
        print(f"  {median:7.3f}  ({each}; {failed} failing)  {src}")
    same = {r["verdicts"] for r in runs[this]} == {r["verdicts"] for r in runs[other]}
    print(f"verdicts and evidence the same in both trees: {same}")
    print(side_by_side.load_line())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=5, help="timed passes over the corpus")
    side_by_side.add_options(parser)
    args = parser.parse_args()
    if args.against:
        this = str(HERE.parent / "src")
        compare(this, str(Path(args.against).resolve()), args.passes, args.pairs)
    elif args.json:
        print(json.dumps(measure(args.passes)))
    else:
        found = measure(args.passes)
        print(f"{found['traces']} traces, {found['checks']} confirmed checks")
        print(f"CPU ms per trace, all its confirmed checks: {found['ms_per_trace']:.3f}")


if __name__ == "__main__":
    main()

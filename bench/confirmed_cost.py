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


def _failing(runs: list[dict[str, Any]]) -> str:
    return f"; {runs[0]['failed']} failing"


BENCH = side_by_side.PerTrace(
    __file__,
    measure,
    counts="{traces} traces, {checks} confirmed checks per pass",
    what="CPU ms per trace, all its confirmed checks",
    digest="verdicts",
    same="verdicts and evidence",
    note=_failing,
)


if __name__ == "__main__":
    BENCH.main(__doc__)

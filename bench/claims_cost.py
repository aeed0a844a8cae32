"""What policy 9's readers of a final reply cost per retail trace (prints figures; not a test).

Each agent message of the golden corpus's traces (tests/golden/retail_grading.jsonl.gz) is
read by the readers every policy 9 check asks (claims of a kind of change, a record's state,
goods sent, a bare "done", what is said confirmed); the memos the retail checks keep are
emptied before each trace, as each attempt's messages are new text. The figure is the
process CPU (``time.process_time``) of a pass over the corpus divided by the number of
traces, the median of several passes. The readers' findings are hashed, so two trees can be
compared (a speed change must move none).

With ``--against OTHER/src`` the same measure runs in fresh processes on this tree and on
*OTHER*'s (its ``examples/retail/checks.py`` beside that ``src``), alternating, printed side
by side (medians over the pairs).

Run: ``.venv/bin/python bench/claims_cost.py [--passes 5] [--against ../main/src --pairs 3]``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the bench folder is no package (tests load this file by path)
    sys.path.insert(0, str(HERE))

import side_by_side  # noqa: E402

READERS = ("_claims", "_states", "_goods_claims", "_success_claimed", "_confirmed")


def _checks() -> Any:
    """The retail checks of the tree whose ``src`` groundstate is imported from."""
    import groundstate

    path = Path(groundstate.__file__).resolve().parents[2] / "examples" / "retail" / "checks.py"
    spec = importlib.util.spec_from_file_location("retail_checks_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def measure(passes: int) -> dict[str, Any]:
    sys.path.insert(0, str(HERE.parent))
    from tests.grading_corpus import load_cases

    from groundstate.trace import MessageEvent

    checks = _checks()
    readers = [getattr(checks, name) for name in READERS]
    memos = [v for v in vars(checks).values() if callable(getattr(v, "cache_clear", None))]
    traces = [
        [
            e.text
            for e in case.events
            if isinstance(e, MessageEvent) and e.role == "agent" and e.text
        ]
        for case in load_cases()
    ]

    def one_pass() -> list[Any]:
        found: list[Any] = []
        for texts in traces:
            for memo in memos:
                memo.cache_clear()
            for text in texts:
                found += [repr(list(reader(text) or [])) for reader in readers]
        return found

    digest = hashlib.sha256("\n".join(one_pass()).encode()).hexdigest()
    seconds = []
    for _ in range(passes):
        start = time.process_time()
        one_pass()
        seconds.append(time.process_time() - start)
    return {
        "traces": len(traces),
        "messages": sum(map(len, traces)),
        "ms_per_trace": statistics.median(seconds) * 1000 / len(traces),
        "findings": digest,
    }


BENCH = side_by_side.PerTrace(
    __file__,
    measure,
    counts="{traces} traces, {messages} agent messages",
    what="CPU ms per trace, policy 9's readers",
    digest="findings",
    same="readers' findings",
)


if __name__ == "__main__":
    BENCH.main(__doc__)

"""The report's JSON text: the same document as ``json.dumps``, one line per list item."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from groundstate.analysis import OutcomeTable, batch_report
from groundstate.report.json_text import INDENTED_LEVELS, json_text

ODD: list[Any] = [
    {},
    [],
    (),
    'é\u2028"\\',
    None,
    {"a": {}, "b": [], "c": [{}], 1: "int key", 2.5: "float key", None: 0, False: 1},
    {"deep": {"er": {"and": {"deeper": {"still": [1, {"x": (1, 2)}]}}}}},
    [[1, 2], {"k": [3]}, "s", math.inf, -0.0, 1e-300],
    {"nan": math.nan},
]


@pytest.mark.parametrize("data", ODD)
def test_the_text_is_the_same_json_document(data: Any) -> None:
    # compared re-encoded: NaN read back is never equal to itself
    assert json.dumps(json.loads(json_text(data))) == json.dumps(json.loads(json.dumps(data)))


def test_a_report_reads_back_equal_and_puts_each_task_on_one_line() -> None:
    from groundstate.store import BatchInfo

    tasks = [f"t{i}" for i in range(7)]
    rows = [
        [t, a, 0, "success" if (i + a) % 3 else "agent_failure", (i + a) % 3 > 0, 0.1, 1.0, None]
        for i, t in enumerate(tasks)
        for a in range(1, 4)
    ]
    batch = BatchInfo.model_validate(
        {
            "batch_id": "b", "created_at": "2026-01-01T00:00:00Z", "suite": "s",
            "suite_path": "s", "suite_hash": "h", "system_spec_hash": "x", "system_spec": {},
            "attempts": 3, "seed": 0, "task_revisions": dict.fromkeys(tasks, 0),
            "task_weights": dict.fromkeys(tasks, 1.0),
            "task_slices": {t: ["odd" if i % 2 else "even"] for i, t in enumerate(tasks)},
        }
    )  # fmt: skip
    data = batch_report(batch, OutcomeTable.from_rows(rows), k_over_supporting=True)
    text = json_text(data)
    assert json.loads(text) == json.loads(json.dumps(data))
    lines = text.splitlines()
    task_lines = [line for line in lines if line.lstrip().startswith('{"task_id": ')]
    assert len(task_lines) == len(tasks)
    assert all(json.loads(line.strip().rstrip(","))["task_id"] in tasks for line in task_lines)
    assert lines[1].startswith('  "batch_id": ')  # top-level keys one per line, indented
    assert max(len(line) - len(line.lstrip()) for line in lines) == 2 * INDENTED_LEVELS

"""Statistics audit, twelfth round: every figure the product prints or exports, recomputed
from the records by a reference written here (exact fractions, ``math.comb``), and found the
same in each output."""

from __future__ import annotations

import json
import zipfile
from fractions import Fraction
from pathlib import Path

from tests.test_stats_independent import cli, import_text, report

# --- the Inspect export's accuracy is the report's success rate ------------------------------


def test_the_inspect_header_accuracy_is_the_mean_of_its_per_task_means(tmp_path: Path) -> None:
    """t1 has one valid attempt (a success) and one invalid, t2 two failures: the report's
    success rate and Inspect's accuracy over epochs (the mean of the per-task reductions) are
    (1 + 0) / 2 = 0.5; the header said 1/3, a pooled mean over valid attempts."""
    rows = "task_id,attempt,success,terminal_reason\n" + "".join(
        f"{t},{a},{s},{r}\n"
        for t, a, s, r in [
            ("t1", 0, 1, ""),
            ("t1", 1, 0, "environment_failure"),
            ("t2", 0, 0, ""),
            ("t2", 1, 0, ""),
        ]
    )
    batch = import_text(tmp_path, rows)
    out = tmp_path / "out.eval"
    code, _, err = cli("export", batch, "--format", "inspect", "--out", str(out),
                       "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0, err
    with zipfile.ZipFile(out) as archive:
        header = json.loads(archive.read("header.json"))
        reductions = json.loads(archive.read("reductions.json"))[0]["samples"]
    accuracy = header["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    means = {s["sample_id"]: s["value"] for s in reductions}
    assert means == {"t1": 1.0, "t2": 0.0}
    want = (Fraction(1, 1) + Fraction(0, 2)) / 2
    assert accuracy == float(want) == report(tmp_path, batch)["success_rate"]["estimate"]

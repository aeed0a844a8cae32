"""Round 26: counts print in the number they take in every command, not only in the reports
round 25 looked at (``verify`` said "1 records, 0 artifacts" and "1 batch(es) checked",
``export`` "wrote 1 records", ``agreement`` "1 attempts paired", the report "counting 1
invalid attempts as failures", an interrupted run "1 of 1 attempts"); no message built
around a count says "task(s)"; and ``plan``'s power grid prints n/a, saying why, for a
number of tasks over which ``compare`` gives no p-value (it printed a power of 0.000)."""

from __future__ import annotations

import ast
import itertools
import json
import re
from pathlib import Path

import groundstate
from groundstate.cli.interrupts import _stored_attempts
from tests.test_stats_round24 import Row, cli, imported

SRC = Path(groundstate.__file__).parent

NOUNS = (
    "tasks|attempts|tries|runs|records|artifacts|batches|reruns|samples|trials|instances"
    "|tests|steps|tools|checks|mutants|labels|rows|values|columns|constraints"
)
ONE_OF = re.compile(rf"(?<![\d./,-])(?<!valid and )1 (?:\w+ )?(?:{NOUNS})\b")
"""A count of one with a plural noun ("1 records", "1 invalid attempts"; not the second of two
counts sharing it, "1 valid and 1 invalid attempts")."""

MARKED = re.compile(r"\b\d+ (?:\w+ )?\w+\((?:s|es)\)")
"""A count with a plural left to the reader ("1 batch(es)", "2 task(s)")."""


def store(tmp: Path) -> tuple[str, str]:
    return ("--store", str(tmp / "s.db"))


def run(*args: str) -> str:
    code, out, err = cli(*args)
    assert code in (0, 3), (args, out, err)
    return out + err


def test_one_of_anything_is_singular_in_every_command(tmp_path: Path) -> None:
    """A batch of one task with one attempt, read by every command that counts something."""
    one = imported(tmp_path, [Row("t0", 0, "success")], "one")
    other = imported(tmp_path, [Row("t0", 0, "agent_failure/x")], "other")
    out = tmp_path / "one.jsonl"
    texts = {
        "verify": run("verify", one, *store(tmp_path)),
        "export": run("export", one, "--format", "jsonl", "--out", str(out), *store(tmp_path)),
        "agreement": run("agreement", one, other, *store(tmp_path)),
    }
    for name, text in texts.items():
        flat = " ".join(text.split())
        assert ONE_OF.findall(flat) == [], (name, flat)
        assert MARKED.findall(flat) == [], (name, flat)
    assert "1 record, 0 artifacts: ok" in texts["verify"]
    assert "1 batch checked: all verify" in texts["verify"]
    assert "wrote 1 record of batch" in texts["export"]
    assert "1 attempt paired on success" in texts["agreement"]
    # the share of agreeing attempts is printed as a fraction: its column said "% agree"
    assert "share agreeing" in texts["agreement"] and "% agree" not in texts["agreement"]


def test_verify_counts_several_in_the_plural(tmp_path: Path) -> None:
    """Several stay plural (the old code said "2 batch(es) checked")."""
    two = imported(tmp_path, [Row("t0", j, "success") for j in range(2)], "two")
    imported(tmp_path, [Row("t0", 0, "success")], "one")
    text = " ".join(run("verify", *store(tmp_path)).split())
    assert f"batch {two}: 2 records, 0 artifacts: ok" in text
    assert "2 batches checked: all verify" in text


def test_the_report_counts_one_invalid_attempt_as_one(tmp_path: Path) -> None:
    rows = [Row("t0", 0, "success"), Row("t1", 0, "environment_failure/x")]
    flat = " ".join(run("report", imported(tmp_path, rows, "b"), *store(tmp_path)).split())
    assert "counting 1 invalid attempt as failures" in flat
    assert ONE_OF.findall(flat) == [], flat


def test_an_interrupted_run_counts_its_attempts_in_their_number(tmp_path: Path) -> None:
    """What Ctrl-C prints of the batch it stopped: "1 of 1 attempts" was printed."""
    one = imported(tmp_path, [Row("t0", 0, "success")], "one")
    assert _stored_attempts(tmp_path / "s.db", one) == "1 of 1 attempt"
    two = imported(tmp_path, [Row("t0", j, "success") for j in range(2)], "two")
    assert _stored_attempts(tmp_path / "s.db", two) == "2 of 2 attempts"


def test_no_message_leaves_a_counts_plural_to_the_reader() -> None:
    """Every f-string of the package that puts a count before a noun: never "{n} task(s)",
    the form importers, validation and the store printed ("1 task(s) of suite 'bank' are not
    valid", "1 sample(s) were invalidated", "1 record(s) deleted at the end")."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.JoinedStr):
                continue
            parts = node.values
            for before, after in itertools.pairwise(parts):
                if not isinstance(before, ast.FormattedValue):
                    continue
                if isinstance(after, ast.Constant) and re.match(
                    r" (?:\w+ )?\w+\((?:s|es)\)", str(after.value)
                ):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}: {after.value!r}")
    assert found == []


# --- plan: no power where compare gives no p-value ----------------------------------------------

PILOT = [Row(t, j, "success" if (t, j) in {("a", 0), ("b", 0), ("b", 1)} else "agent_failure/x")
         for t in ("a", "b", "c") for j in range(2)]  # fmt: skip
"""Three tasks of two attempts: a pilot of fewer tasks than compare tests over."""


def test_plan_says_na_and_why_below_five_tasks(tmp_path: Path) -> None:
    """Fails on the old code: the pilot's own row (T=3) printed 0.000 in every column, read
    as a power rounded down; compare gives no p-value over fewer than 5 tasks, so there is
    nothing to have power. The JSON keeps the documented power 0 (docs/diagnosis.md)."""
    pilot = imported(tmp_path, PILOT, "pilot")
    text = run("plan", pilot, *store(tmp_path))
    rows = {line.split("│")[1].strip(): line for line in text.splitlines() if line.count("│") > 3}
    assert "0.000" not in rows["3"] and rows["3"].count("n/a") == 8, rows["3"]
    assert "n/a" not in rows["25"]
    flat = " ".join(text.split())
    assert "n/a: T=3: compare gives no p-value over fewer than 5 tasks" in flat
    assert "(power 0 in --json)" in flat
    code, out, err = cli("plan", pilot, "--json", *store(tmp_path))
    assert code == 0, err
    grid = json.loads(out)["power_grid"]
    assert set(grid["3"].values()) == {0.0}
    assert all(0 < power < 1 for power in grid["25"].values())


def test_plan_of_enough_tasks_prints_no_na_note(tmp_path: Path) -> None:
    """The control: a pilot of five tasks has a power in every row, and no note."""
    rows = [Row(t, j, "success" if (ord(t) + j) % 3 else "agent_failure/x")
            for t in "abcde" for j in range(2)]  # fmt: skip
    text = run("plan", imported(tmp_path, rows, "pilot"), *store(tmp_path))
    assert "n/a" not in text and "no p-value" not in text

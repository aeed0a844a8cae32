"""Forty-sixth round, the command line: refusals as a reviewer with unseen inputs meets them,
and the figures of ``report --json`` and ``compare --json`` recomputed from the rows imported.

- ``run`` on a suite with several problems printed them on one ``error:`` line joined by a
  literal ``\\n``: each is now an ``error:`` line of its own (a listed error's items stay
  indented under it, one line each whatever a check's detail holds);
- a long quoted value with spaces (a task id, a batch name, a ``-k`` of 3,000 words) was
  echoed whole: shortening took runs without a space only; now any quoted value past 200
  characters is shortened, and a value with spaces is quoted where it was bare (``no batch
  word word ...``), so it can be; warnings too;
- ``compare``'s judge-error notes counted the whole batch while its denominators counted the
  compared tasks: both now count the compared tasks, and say so;
- click's "Choose from:" list of a missing choice printed a literal ``\\n\\t``.
"""

from __future__ import annotations

import json
import math
import random
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.errors import shortened
from tests.cli_workspace import STORE, SYSTEM, assert_refused, digest, groundstate
from tests.test_stats_independent import ref_interval, ref_paired, ref_pass_at, ref_pass_hat

WORDS = "word " * 600
"""A value of 3,000 characters, spaces in it."""


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def _import(tmp: Path, name: str, rows: list[dict[str, Any]]) -> str:
    path = tmp / f"{name}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    store = str(tmp / "s.db")
    code, _, err = _cli("import-results", str(path), "--name", name, "--store", store)
    assert code == 0, err
    return store


# --- several problems, each a line ---------------------------------------------------------


def test_run_on_a_suite_with_several_problems_prints_each_on_an_error_line(copy: Path) -> None:
    """Fails on the old code: the ten problems of one bad task file were one line, joined by
    a literal ``\\nerror:``."""
    (copy / "retail" / "tasks" / "zz.yaml").write_text("id: x\nnope: 1\n")
    before = digest(copy / STORE)
    outcome = groundstate("run", "retail", "--system", SYSTEM, "--store", STORE, cwd=copy)
    assert_refused(outcome, "zz.yaml")
    assert "\\n" not in outcome.err, outcome.err
    lines = outcome.err.splitlines()
    assert "error: retail/tasks/zz.yaml: task_id: required field is missing" in lines
    assert "error: retail/tasks/zz.yaml:2: nope: unknown field" in lines
    assert all(line.startswith("error: ") for line in lines), lines
    assert digest(copy / STORE) == before


def test_one_problem_is_still_one_line(copy: Path) -> None:
    """False-positive guard: one problem, one line, as before."""
    task = copy / "retail" / "tasks" / "refund-socks.yaml"
    task.write_text(task.read_text().replace("task_revision: 1", "task_revision: one"))
    outcome = groundstate("run", "retail", "--system", SYSTEM, "--store", STORE, cwd=copy)
    assert_refused(outcome, "refund-socks.yaml:3: task_revision")
    assert len(outcome.err.splitlines()) == 1, outcome.err


def test_an_invalid_tasks_item_holding_a_line_break_stays_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A check's detail with a line break (an exception's text) made a line of its own under
    the listed refusal, where it could pass for another task's line."""
    from groundstate.validation import InvalidTasks, require_valid
    from groundstate.validation import suite as module
    from groundstate.validation.results import CheckOutcome, TaskValidity

    detail = "broke\n  other-task: passes"
    failed = TaskValidity(
        task_id="t", checks=[CheckOutcome(name="oracle", passed=False, detail=detail)]
    )
    monkeypatch.setattr(module, "ensure_valid", lambda *_a, **_k: {"t": failed})
    suite = type("S", (), {"name": "s"})()
    with pytest.raises(InvalidTasks) as caught:
        require_valid(suite, None)  # type: ignore[arg-type]
    items = str(caught.value).split("\n")[1:]
    assert items == ["  t: oracle: broke\\n  other-task: passes"], items


# --- long values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (f"no task {WORDS.strip()!r} here", "no task 'word word "),
        (f"x: {(WORDS + chr(39)).strip()!r}: why", 'x: "word word '),  # repr's double quotes
        (f"k='{'a b ' * 150}\\' c': why", "k='a b a b "),  # an escaped quote inside
    ],
    ids=["single", "double", "escaped"],
)
def test_a_long_quoted_value_with_spaces_is_shortened(text: str, shown: str) -> None:
    """Fails on the old code: only runs without a space were shortened."""
    got = shortened(text)
    assert got.startswith(shown), got
    assert len(got) < 200, got
    assert re.search(r"…\([\d,]+ characters\)…", got), got
    assert got.endswith(text[-6:]), got  # what follows the value is kept


@pytest.mark.parametrize(
    "text",
    [
        "the suite's task and " + "x " * 200 + "the batch's",  # apostrophes, not quotes
        "a 'short value with spaces' and another 'one'",
        "'" + "y " * 100 + "'",  # 200 characters inside: whole
    ],
)
def test_what_is_no_long_quoted_value_is_left_whole(text: str) -> None:
    """False-positive guards: words with apostrophes, short quoted values."""
    assert shortened(text) == text


@pytest.mark.parametrize(
    ("value", "shown"),
    [("nope", "nope"), ("a1b2", "a1b2"), ("a b", "'a b'"), ("", "''"), ("a\nb", "'a\\nb'")],
)
def test_a_given_name_is_quoted_only_when_it_is_not_one_word(value: str, shown: str) -> None:
    from groundstate.errors import named_value

    assert named_value(value) == shown


@pytest.mark.parametrize(
    "args",
    [
        ("report", WORDS),
        ("runs", WORDS),
        ("show", WORDS),
        ("verify", WORDS),
        ("compare", "x", WORDS),
        ("run", "retail", "--system", SYSTEM, "-k", WORDS),
        ("run", "retail", "--system", SYSTEM, "--slice", WORDS),
        ("run", "retail", "--system", SYSTEM, "--task", WORDS),
        ("run", "retail", "--system", SYSTEM, "--resume", WORDS),
    ],
    ids=lambda a: "-".join(a[:1] + tuple(x for x in a if x.startswith("-"))),
)
def test_a_long_name_with_spaces_is_shortened_in_each_refusal(copy: Path, args: tuple[str]) -> None:
    """Fails on the old code for each: the 3,000 characters were echoed whole (unquoted for
    a batch, a run, -k)."""
    before = digest(copy / STORE)
    outcome = groundstate(*args, "--store", STORE, cwd=copy)
    assert_refused(outcome, "(3,000 characters)")
    assert len(outcome.err) < 600, outcome.err
    assert digest(copy / STORE) == before


def test_an_unknown_batch_named_plainly_is_named_as_before(copy: Path) -> None:
    """False-positive guard: a one-word id is not quoted."""
    outcome = groundstate("report", "nope", "--store", STORE, cwd=copy)
    assert_refused(outcome, f"no batch nope in the run store {STORE}")


def test_an_ignored_column_with_a_long_name_is_quoted_and_shortened(tmp_path: Path) -> None:
    """Fails on the old code: the warning echoed the column's 3,000 characters bare."""
    row = {"task_id": "a", "attempt": 1, "success": True, WORDS: 1}
    (tmp_path / "r.jsonl").write_text(json.dumps(row) + "\n")
    code, _, err = _cli("import-results", str(tmp_path / "r.jsonl"), "--name", "q",
                        "--store", str(tmp_path / "s.db"))  # fmt: skip
    assert code == 0, err
    (warning,) = [line for line in err.splitlines() if "ignored columns" in line]
    assert "'word word" in warning and "(3,000 characters)" in warning, warning
    assert len(warning) < 300, warning


def test_a_missing_choice_lists_the_choices_on_one_line(copy: Path) -> None:
    """Fails on the old code: ``Choose from:\\n\\tjsonl,\\n\\tcsv,...`` with literal escapes."""
    outcome = groundstate("export", "x", "--out", "o.jsonl", "--store", STORE, cwd=copy)
    assert_refused(outcome, "Choose from: jsonl, csv, inspect")
    assert "\\n" not in outcome.err and "\\t" not in outcome.err


# --- compare's notes over the compared tasks -------------------------------------------------


def _judged_batches(tmp: Path, extra: int) -> str:
    """A: tasks t1..t5 and *extra* more, a judge error on t1 and on each extra task; B: t1..t5
    with none. Paired on t1..t5."""
    rows_a, rows_b = [], []
    for i in range(1, 6 + extra):
        for attempt in (1, 2):
            ok = (i + attempt) % 2 == 0
            row = {"task_id": f"t{i}", "attempt": attempt, "success": ok,
                   "terminal_reason": "success" if ok else "agent_failure"}  # fmt: skip
            judged = (i == 1 or i > 5) and attempt == 1
            rows_a.append({**row, "judge_errors": int(judged)})
            if i <= 5:
                rows_b.append(row)
    _import(tmp, "A", rows_a)
    return _import(tmp, "B", rows_b)


def test_compare_judge_error_note_counts_the_compared_tasks_only(tmp_path: Path) -> None:
    """Fails on the old code: the note said ``3 of 16 counted attempts`` and named t6, t7
    (not compared), beside a denominators note over the 5 compared tasks."""
    store = _judged_batches(tmp_path, extra=2)
    code, out, err = _cli("compare", "A", "B", "--json", "--store", store)
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "paired" and data["paired_tasks"] == [f"t{i}" for i in range(1, 6)]
    (note,) = [n for n in data["notes"] if "judge" in n]
    assert "on 5 of its 7 tasks (those compared): 1 of 10 counted attempts" in note, note
    assert note.endswith("attempts by task: t1 (1)"), note
    code, out, _ = _cli("report", "A", "--json", "--store", store)
    assert json.loads(out)["judge_errors"]["attempts"] == 3  # the batch's own report: all


def test_compare_judge_error_note_of_a_batch_compared_whole(tmp_path: Path) -> None:
    """False-positive guard: every task compared, the note is the batch's, unprefixed."""
    store = _judged_batches(tmp_path, extra=0)
    code, out, err = _cli("compare", "A", "B", "--json", "--store", store)
    assert code == 0, err
    (note,) = [n for n in json.loads(out)["notes"] if "judge" in n]
    assert re.search(r"\): 1 of 10 counted attempts had a judge", note), note
    assert "those compared" not in note


# --- figures recomputed from the rows --------------------------------------------------------


def _side(rng: random.Random, tasks: int) -> tuple[list[dict[str, Any]], dict[str, tuple]]:
    """Rows of one batch: 1 to 5 attempts a task (unequal), some tasks all-pass or all-fail,
    some attempts invalid (environment failures, out of the valid view's denominators, failures
    in the strict view's). Per task: (valid n, successes, all attempts)."""
    rows, counts = [], {}
    for i in range(tasks):
        n, kind, valid, c = rng.randint(1, 5), rng.choice(["mix", "all", "none"]), 0, 0
        for attempt in range(1, n + 1):
            invalid = rng.random() < 0.15
            ok = not invalid and (kind == "all" or (kind == "mix" and rng.random() < 0.5))
            reason = "environment_failure" if invalid else "success" if ok else "agent_failure"
            rows.append({"task_id": f"t{i}", "attempt": attempt, "success": ok,
                         "terminal_reason": reason})  # fmt: skip
            valid += not invalid
            c += ok
        counts[f"t{i}"] = (valid, c, n)
    return rows, counts


def _value(metric: str, n: int, c: int, k: int | None) -> Fraction:
    if metric == "success_rate":
        return Fraction(c, n)
    assert k is not None
    return ref_pass_at(n, c, k) if metric == "pass_at_k" else ref_pass_hat(n, c, k)


def _keys(kmax: int) -> list[tuple[str, str, int | None]]:
    return [("success_rate", "success_rate", None)] + [
        (f"{metric}".replace("_k", f"_{k}"), metric, k)
        for metric in ("pass_at_k", "pass_hat_k")
        for k in range(1, kmax + 1)
    ]


@pytest.mark.parametrize("seed", range(8))
def test_compare_and_report_json_match_a_recomputation_from_the_rows(
    tmp_path: Path, seed: int
) -> None:
    """Independent re-computation (exact rationals per task, equal weights) of ``compare
    --json`` in both views and of ``report --json``: the common k, each side's estimate and
    interval, b - a with its SE, interval and p-value, for batches with unequal attempt
    counts, all-pass and all-fail tasks and invalid attempts."""
    rng = random.Random(seed)
    tasks = rng.randint(5, 8)
    (rows_a, a), (rows_b, b) = _side(rng, tasks), _side(rng, tasks)
    _import(tmp_path, "A", rows_a)
    store = _import(tmp_path, "B", rows_b)
    code, out, err = _cli("compare", "A", "B", "--json", "--store", store)
    assert code in (0, 3), err
    data = json.loads(out)
    for view in ("valid", "strict"):
        # strict: every attempt counts, an invalid one as a failure: (n all, c)
        pick = (lambda t: t[:2]) if view == "valid" else (lambda t: (t[2], t[1]))
        shared = sorted(t for t in a if pick(a[t])[0] and pick(b[t])[0])
        if len(shared) < 5:
            continue
        va, vb = {t: pick(a[t]) for t in shared}, {t: pick(b[t]) for t in shared}
        common = min(min(va[t][0], vb[t][0]) for t in shared)
        assert data["common_k"][view] == common
        assert set(data["metrics"][view]) == {key for key, _, _ in _keys(common)}
        for key, metric, k in _keys(common):
            got = data["metrics"][view][key]
            for side, values in (("a", va), ("b", vb)):
                mean = sum(_value(metric, *values[t], k) for t in shared) / len(shared)
                assert got[side]["estimate"] == pytest.approx(float(mean), abs=1e-12)
                if metric == "success_rate":
                    floats = [float(_value(metric, *values[t], k)) for t in shared]
                    low, high = ref_interval(floats, [1.0] * len(shared))
                    assert got[side]["ci_low"] == pytest.approx(low, abs=1e-7), (side, got)
                    assert got[side]["ci_high"] == pytest.approx(high, abs=1e-7), (side, got)
            mean, se, low, high, p = ref_paired(va, vb, metric, k or 1)
            diff = got["difference"]
            assert diff["estimate"] == pytest.approx(mean, abs=1e-12)
            if diff["method"] == "t_cr1":
                assert diff["se"] == pytest.approx(se, rel=1e-9)
                assert (diff["ci_low"], diff["ci_high"]) == pytest.approx((low, high), abs=1e-9)
                assert got["p_value"] == pytest.approx(p, rel=1e-6, abs=1e-12)
            else:
                assert se == 0 or math.isclose(se, 0, abs_tol=1e-12), (se, diff)
    code, out, err = _cli("report", "A", "--json", "--store", store)
    assert code in (0, 3), err
    report = json.loads(out)
    used = [t for t in a if a[t][0]]
    if not used:
        return
    kmax = min(a[t][0] for t in used)
    assert sorted(map(int, report["pass_at_k"])) == list(range(1, kmax + 1))  # none past it
    assert report["valid_attempts"] == sum(a[t][0] for t in a)
    assert report["invalid_attempts"] == sum(a[t][2] - a[t][0] for t in a)
    for k in range(1, kmax + 1):
        for name, metric in (("pass_at_k", "pass_at_k"), ("pass_hat_k", "pass_hat_k")):
            mean = sum(_value(metric, *a[t][:2], k) for t in used) / len(used)
            assert report[name][str(k)]["estimate"] == pytest.approx(float(mean), abs=1e-12)

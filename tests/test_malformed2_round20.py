"""Bad input, second pass of the twentieth round: what the first pass
(``tests/test_malformed_round20.py``) left.

- ``lock`` hashed a suite whose fixture does not build, is not UTF-8 or is a folder and exited
  0; ``check``, ``validate`` and ``run`` refuse such a suite. It now goes through their check.
- Tool arguments that are JSON but over ``gateway.MAX_ARGUMENT_CHARS`` were refused and kept
  whole in the trace (and a schema's message quoting them, in the error); now cut, with their
  true size and SHA-256 in the refusal, the tool's parameters kept so a constraint on
  ``args`` still sees the attempt.
- ``report --html``, ``compare --html`` and ``run --html`` naming the run store wrote the HTML
  over it (``export --out`` refused that); ``sample-failures --out`` could write into the
  artifacts. One check now, before any work.
- Controls: options out of range, a resume of an unknown batch or of a changed suite, output
  paths that are folders or cannot be made, all refused already.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from groundstate.gateway import MAX_ARGUMENT_CHARS, SHOWN_CHARS
from groundstate.grading.constraints._match import _has_args
from tests.cli_workspace import (
    SYSTEM,
    TASK,
    assert_refused,
    digest,
    groundstate,
    make_workspace,
    spoilable_copy,
)
from tests.conftest import EXAMPLES
from tests.test_malformed_round20 import _bad_calls_then_the_task

# --- lock refuses what check refuses ------------------------------------------------------

FIXTURE = "retail/fixtures/retail.sql"


def _not_building(root: Path) -> None:
    (root / FIXTURE).write_text("CREATE TABLE (;\n")


def _not_utf8(root: Path) -> None:
    (root / FIXTURE).write_bytes(b"\xff\xfeC\x00R\x00")


def _a_folder(root: Path) -> None:
    (root / FIXTURE).unlink()
    (root / FIXTURE).mkdir()


BROKEN_FIXTURES = {
    "does not build": (_not_building, "does not build"),
    "not UTF-8": (_not_utf8, "UTF-8"),
    "a folder": (_a_folder, "folder"),
}


@pytest.fixture
def suite_copy(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES / "retail", tmp_path / "retail")
    return tmp_path


@pytest.mark.parametrize("broken", list(BROKEN_FIXTURES))
@pytest.mark.parametrize("check", [False, True], ids=["lock", "lock --check"])
def test_lock_refuses_a_suite_whose_fixture_check_refuses(
    suite_copy: Path, broken: str, check: bool
) -> None:
    if check:  # a lock made while the suite was sound
        assert groundstate("lock", "retail", cwd=suite_copy).code == 0
    before = (suite_copy / "retail" / "suite.lock").read_bytes() if check else None
    mutate, reason = BROKEN_FIXTURES[broken]
    mutate(suite_copy)
    outcome = groundstate("lock", "retail", *(["--check"] if check else []), cwd=suite_copy)
    assert_refused(outcome, FIXTURE, reason)
    lock = suite_copy / "retail" / "suite.lock"
    assert (lock.read_bytes() if lock.exists() else None) == before  # nothing written


def test_lock_of_a_sound_suite_still_locks_and_checks(suite_copy: Path) -> None:
    made = groundstate("lock", "retail", cwd=suite_copy)
    assert made.code == 0 and "locked 18 tasks" in made.out, made.text
    checked = groundstate("lock", "retail", "--check", cwd=suite_copy)
    assert checked.code == 0 and "matches its lock" in checked.out, checked.text


# --- tool arguments that are JSON but too large ---------------------------------------------


def _oversized_cases() -> dict[str, tuple[object, str]]:
    blob = "A" * (MAX_ARGUMENT_CHARS + 10)
    padding = {f"k{i}": i for i in range(200_000)}
    return {
        "too large": ({"account": blob, "pin": "1"}, "over the 1,000,000 a tool is given"),
        "too large, schema-wrong": ({"account": blob}, "'pin' is a required property"),
        "too large in a list": ({"account": "A", "pin": [[blob] * 2]}, "is not of type"),
        "padding keys": ({**padding, "account": "A", "pin": "1"}, "Additional properties"),
    }


def _refused_events(run: Any) -> list[Any]:
    return [e for e in run.observation_action_log if getattr(e, "error_class", None)]


def test_oversized_json_arguments_are_cut_in_the_trace_and_their_size_and_digest_said() -> None:
    """They were kept whole: a refused call of 3 MB made a trace (and a record) of 3 MB; a
    schema's message quoted the whole value in the error as well."""
    cases = _oversized_cases()
    run, seen = _bad_calls_then_the_task(cases)
    events = _refused_events(run)
    assert len(events) == len(cases)
    for (name, (args, said)), event in zip(cases.items(), events, strict=True):
        ok, error_class, error = seen[name]
        assert (ok, error_class) == (False, "invalid_arguments"), name
        text = json.dumps(args, ensure_ascii=False)
        assert said in error and f"{len(text):,} characters" in error, (name, error)
        assert hashlib.sha256(text.encode()).hexdigest() in error, name
        assert event.error == error  # the record says what the agent was told
        assert len(error) < 3 * SHOWN_CHARS, name
        assert len(json.dumps(event.args)) < 4 * SHOWN_CHARS, name
        # the shape is kept: a constraint on the tool's parameters still sees the attempt
        assert isinstance(event.args, dict) and _has_args(event, {"account": "A"}) == (
            args["account"] == "A"  # type: ignore[index]
        ), name
    assert len(run.model_dump_json()) < 100_000


def test_arguments_within_the_limit_are_kept_whole() -> None:
    """Control: only oversized arguments are cut."""
    args = {"account": "A" * 5_000, "pin": "1"}
    run, seen = _bad_calls_then_the_task({"long but allowed": (args, "")})
    assert seen["long but allowed"][1] == "tool_error"  # no such account
    assert _refused_events(run)[0].args == args


def test_cut_keeps_small_values_whole_and_says_what_it_left_out() -> None:
    from groundstate.gateway import cut

    value = {
        "big": "x" * 50_000,
        "name": "n",
        "items": list(range(10_000)),
        "deep": [[[[[[[[[[1]]]]]]]]]],
    }
    shown = cut(value, first=frozenset({"name"}))
    assert shown["name"] == "n"
    assert shown["big"].endswith("(50,000 characters)") or "big" not in shown
    assert len(json.dumps(shown)) < 2 * SHOWN_CHARS
    assert json.dumps(cut(value["deep"])).count("[") <= 9  # deeper is a marker
    assert cut({"a": 1, "b": [1, 2]}) == {"a": 1, "b": [1, 2]}  # small: unchanged


# --- output paths naming the run store ------------------------------------------------------


@pytest.fixture(scope="module")
def with_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_workspace(tmp_path_factory.mktemp("store"), batches=("x", "y"))
    (root / "artifacts").mkdir(exist_ok=True)
    (root / "a-folder").mkdir()
    return root


@pytest.fixture
def store_copy(with_store: Path, tmp_path: Path) -> Path:
    """A copy each test may spoil (the old code wrote HTML over the store)."""
    return spoilable_copy(with_store, tmp_path)


def _batches(root: Path) -> list[str]:
    out = groundstate("batches", "--json", "--store", "s.db", cwd=root)
    assert out.code == 0, out.text
    return [b["batch_id"] for b in json.loads(out.out)]


STORE_TARGETS = ["s.db", "./s.db", "s.db-wal", "artifacts/report.html"]


@pytest.mark.parametrize("target", STORE_TARGETS)
@pytest.mark.parametrize("command", ["report", "compare", "run", "sample-failures"])
def test_an_output_path_naming_the_store_is_refused_before_any_work(
    store_copy: Path, command: str, target: str
) -> None:
    """``report --html s.db`` wrote its HTML over the store it had just read."""
    with_store = store_copy
    if command == "sample-failures" and not target.startswith("artifacts"):
        pytest.skip("--out is a folder: click refuses a file already")
    a, b = _batches(with_store)[:2]
    args = {
        "report": ["report", "--html", target],
        "compare": ["compare", a, b, "--html", target],
        "run": ["run", "retail", "--system", SYSTEM, "--task", TASK, "--html", target],
        "sample-failures": ["sample-failures", a, "--n", "1", "--out", target],
    }[command]
    before = digest(with_store / "s.db")
    outcome = groundstate(*args, "--store", "s.db", cwd=with_store)
    option = "--out" if command == "sample-failures" else "--html"
    assert_refused(outcome, option, target.removeprefix("./"), "run store's own file")
    assert digest(with_store / "s.db") == before
    assert not (with_store / "artifacts" / "report.html").exists()


def test_an_html_report_elsewhere_is_still_written(with_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = groundstate("report", "--html", out, "--store", "s.db", cwd=with_store)
    assert done.code == 0, done.text
    assert out.read_text().lstrip().lower().startswith("<!doctype html")


# --- controls: refused already, kept so ------------------------------------------------------

CONTROLS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "--attempts 0": (["run", "retail", "--system", SYSTEM, "--attempts", "0"], ("--attempts",)),
    "--attempts huge": (
        ["run", "retail", "--system", SYSTEM, "--attempts", "9" * 25],
        ("--attempts",),
    ),
    "--concurrency -1": (
        ["run", "retail", "--system", SYSTEM, "--concurrency", "-1"],
        ("--concurrency",),
    ),
    "--resume of no batch": (
        ["run", "retail", "--system", SYSTEM, "--resume", "deadbeef"],
        ("deadbeef",),
    ),
    "compare with no such batch": (["compare", "nope", "nope2"], ("nope",)),
    "report --html a folder": (["report", "--html", "a-folder"], ("a-folder",)),
    "report --html under a file": (["report", "--html", "results.jsonl/x.html"], ("x.html",)),
    "export to a folder": (["export", "--format", "jsonl", "--out", "a-folder"], ("a-folder",)),
    "import-results of a folder": (["import-results", "retail", "--name", "z"], ("retail",)),
    "plan --delta 0": (["plan", "LATEST", "--delta", "0"], ("--delta",)),
}


@pytest.mark.parametrize("control", list(CONTROLS))
def test_other_bad_options_and_paths_stay_refused(store_copy: Path, control: str) -> None:
    with_store = store_copy
    args, names = CONTROLS[control]
    args = [_batches(with_store)[0] if a == "LATEST" else a for a in args]
    before = digest(with_store / "s.db")
    outcome = groundstate(*args, "--store", "s.db", cwd=with_store)
    assert outcome.code == 2 and "Traceback" not in outcome.text, outcome.text
    assert all(name in outcome.err for name in names), outcome.text
    assert digest(with_store / "s.db") == before

"""Command-line input and user files, forty-third round.

- A task's ``clock`` without a time zone (``2026-01-15T10:00:00``, a day alone) was accepted:
  SQL read it as UTC, a tool's ``ctx.now().timestamp()`` as the machine's local time. It is
  refused now, naming the field; a clock with an offset reads the same on SQLite and
  PostgreSQL (PostgreSQL's ``now()`` dropped the offset).
- ``reset_check.initial_state_hash`` that is no state hash (the 12 digits a report prints,
  capitals, empty) passed ``check`` and failed every attempt's reset.
- ``--concurrency`` had no upper bound on the Ray executor: 10^20 was refused only as the
  batch was stored, after validation.
- Later messages named the suite's files by their absolute paths (``lock``, ``run
  --locked``), while loading named them as the user gave the suite.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from groundstate.spec.suite import load_suite
from groundstate.validation.static import check_suite
from tests.cli_workspace import (
    STORE,
    SYSTEM,
    assert_refused,
    digest,
    groundstate,
    make_workspace,
    spoilable_copy,
)
from tests.conftest import EXAMPLES

TASK_FILE = "retail/tasks/refund-socks.yaml"
CLOCK_LINE = "clock: 2025-06-16T15:00:00Z"
HASH = "81fdebfab1e7badbf84b97aae63923001e72f3010824727e70306c7657570817"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_workspace(tmp_path_factory.mktemp("pristine"))


@pytest.fixture
def copy(pristine: Path, tmp_path: Path) -> Path:
    return spoilable_copy(pristine, tmp_path)


@pytest.fixture
def retail(tmp_path: Path) -> Path:
    """The retail suite alone, to damage and check in this process."""
    shutil.copytree(EXAMPLES / "retail", tmp_path / "retail")
    return tmp_path / "retail"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def _problems(suite: Path) -> list[str]:
    return [str(problem) for problem in check_suite(suite).errors]


# --- a clock names a moment: its time zone is required ----------------------------------------


@pytest.mark.parametrize(
    "clock",
    [
        "2025-06-16T15:00:00",
        "2025-06-16 15:00:00",
        '"2025-06-16T15:00:00"',
        "2025-06-16T15:00",  # not a YAML timestamp: pydantic's reading
        "2025-06-16T15:00:00.250",
    ],
)
def test_a_clock_without_a_time_zone_is_refused_naming_the_field(retail: Path, clock: str) -> None:
    """Fails on the old code: accepted, naive."""
    _edit(retail / "tasks/refund-socks.yaml", CLOCK_LINE, f"clock: {clock}")
    problems = _problems(retail)
    assert len(problems) == 1, problems
    assert "refund-socks.yaml:7: clock:" in problems[0], problems
    assert "has no time zone" in problems[0] and "Z" in problems[0], problems


def test_a_day_alone_is_refused_as_no_moment(retail: Path) -> None:
    """Fails on the old code: read as midnight, no time zone."""
    _edit(retail / "tasks/refund-socks.yaml", CLOCK_LINE, "clock: 2025-06-16")
    problems = _problems(retail)
    assert len(problems) == 1, problems
    assert "clock: 2025-06-16 is a day, not a moment" in problems[0], problems
    assert '"2025-06-16T00:00:00Z"' in problems[0], problems


@pytest.mark.parametrize(
    ("clock", "moment"),
    [
        ("2025-06-16T15:00:00Z", datetime(2025, 6, 16, 15, tzinfo=UTC)),
        ("2025-06-16t15:00:00z", datetime(2025, 6, 16, 15, tzinfo=UTC)),
        ('"2025-06-16T17:00:00+02:00"', datetime(2025, 6, 16, 15, tzinfo=UTC)),
        ("2025-06-16 10:00:00 -5", datetime(2025, 6, 16, 15, tzinfo=UTC)),
    ],
)
def test_a_clock_with_a_time_zone_loads_as_that_moment(
    retail: Path, clock: str, moment: datetime
) -> None:
    """False-positive guard: every way of writing a zone still loads."""
    _edit(retail / "tasks/refund-socks.yaml", CLOCK_LINE, f"clock: {clock}")
    assert load_suite(retail).tasks["refund-socks"].clock == moment


def test_a_clock_without_a_zone_is_refused_by_run_before_anything_is_stored(copy: Path) -> None:
    """The command a user runs: one error line naming the file, line and field, exit 2, the
    store as it was."""
    _edit(copy / TASK_FILE, CLOCK_LINE, "clock: 2025-06-16T15:00:00")
    before = digest(copy / STORE)
    outcome = groundstate("run", "retail", "--system", SYSTEM, "--store", STORE, cwd=copy)
    assert outcome.code == 2, outcome.text
    assert_refused(outcome, "retail/tasks/refund-socks.yaml:7: clock:", "has no time zone")
    assert digest(copy / STORE) == before


def test_the_tau2_converter_writes_a_clock_with_its_zone() -> None:
    """Fails on the old code: τ² suites were converted with a naive clock, which would now be
    refused when the converted suite loads."""
    from groundstate.tau2.convert import CLOCK

    assert CLOCK.utcoffset() == timedelta(0)


def _sql_now(kind: str, tmp_path: Path, clock: datetime) -> list[tuple[object, ...]]:
    fixture = tmp_path / "f.sql"
    fixture.write_text("CREATE TABLE t (id INTEGER PRIMARY KEY);\n")
    if kind == "sqlite":
        from groundstate.environments.sqlite import SqliteEnvironment as Kind
    else:
        from tests.test_postgres import needs_postgres

        needs_postgres()
        from groundstate.environments.postgres import (  # type: ignore[assignment]
            PostgresEnvironment as Kind,
        )
    with Kind(fixture, clock=clock) as env:
        env.reset()
        return env.evaluator_view().query("SELECT datetime('now'), date('now')")


@pytest.mark.parametrize(
    "clock",
    [
        datetime(2026, 1, 15, 1, tzinfo=timezone(timedelta(hours=2))),
        datetime(2026, 1, 15, 23, 30, tzinfo=timezone(timedelta(hours=-5))),
        datetime(2026, 1, 15, 1, tzinfo=UTC),
    ],
    ids=["plus-2", "minus-5", "utc"],
)
def test_sql_reads_a_clock_with_an_offset_alike_on_sqlite_and_postgres(
    tmp_path: Path, clock: datetime
) -> None:
    """Fails on the old code for the offsets: PostgreSQL's ``now()`` cast the clock to a
    timestamp, dropping its offset (01:00+02:00 was 01:00 UTC, 23:00 the day before on
    SQLite)."""
    pytest.importorskip("psycopg")
    utc = clock.astimezone(UTC)
    expected = [(utc.strftime("%Y-%m-%d %H:%M:%S"), utc.strftime("%Y-%m-%d"))]
    assert _sql_now("sqlite", tmp_path, clock) == expected
    assert _sql_now("postgres", tmp_path, clock) == expected


# --- a declared state hash is a whole one ---------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        (HASH[:12], "'81fdebfab1e7' is not a state hash (64 hexadecimal digits"),
        (HASH.upper(), "has capital letters"),
        ('""', "'' is not a state hash"),
        (HASH + "0", "65 characters is not a state hash"),
        (HASH[:-1] + "g", "64 characters is not a state hash"),
        ("sha256:" + HASH[:8], "'sha256:81fdebfa' is not a state hash"),
    ],
    ids=["report-prefix", "capitals", "empty", "one-digit-more", "not-hex", "prefixed"],
)
def test_a_declared_hash_no_state_has_is_refused_at_load(
    retail: Path, declared: str, said: str
) -> None:
    """Fails on the old code: ``check`` passed, and every attempt's reset failed."""
    _edit(retail / "tasks/refund-socks.yaml", f"initial_state_hash: {HASH}",
          f"initial_state_hash: {declared}")  # fmt: skip
    problems = _problems(retail)
    assert len(problems) == 1, problems
    assert "refund-socks.yaml:9: reset_check.initial_state_hash:" in problems[0], problems
    assert said in problems[0], problems


@pytest.mark.parametrize("declared", [HASH, "null"])
def test_a_whole_hash_or_none_loads(retail: Path, declared: str) -> None:
    """False-positive guard: the example's own hash, and an undeclared one."""
    _edit(retail / "tasks/refund-socks.yaml", f"initial_state_hash: {HASH}",
          f"initial_state_hash: {declared}")  # fmt: skip
    task = load_suite(retail).tasks["refund-socks"]
    assert task.reset_check.initial_state_hash == (None if declared == "null" else HASH)


def test_a_short_hash_is_refused_by_check_on_the_command_line(copy: Path) -> None:
    """Fails on the old code: ``check`` said no errors."""
    _edit(copy / TASK_FILE, f"initial_state_hash: {HASH}", f"initial_state_hash: {HASH[:12]}")
    outcome = groundstate("check", "retail", cwd=copy)
    assert outcome.code == 2, outcome.text
    assert "retail/tasks/refund-socks.yaml:9: reset_check.initial_state_hash:" in outcome.text
    assert "Traceback" not in outcome.text


# --- --concurrency has a bound on every executor ---------------------------------------------


@pytest.mark.parametrize("executor", ["in-process", "process", "ray"])
@pytest.mark.parametrize("concurrency", ["10001", "99999999999999999999"])
def test_a_concurrency_past_the_bound_is_refused_before_anything_runs(
    copy: Path, executor: str, concurrency: str
) -> None:
    """Fails on the old code with Ray: validation ran and cached its results, then storing the
    batch failed."""
    before = digest(copy / STORE)
    options = ["--executor", executor, "--concurrency", concurrency]
    outcome = groundstate("run", "retail", "--system", SYSTEM, "--store", STORE, *options,
                          cwd=copy)  # fmt: skip
    assert outcome.code == 2, outcome.text
    assert "--concurrency" in outcome.err and "1<=x<=10000" in outcome.err, outcome.text
    assert "Traceback" not in outcome.text
    assert digest(copy / STORE) == before


def test_the_command_and_the_library_share_the_bound() -> None:
    from groundstate.cli import runs
    from groundstate.runner import MAX_CONCURRENCY, BatchConfig

    assert runs.MAX_CONCURRENCY == MAX_CONCURRENCY
    assert BatchConfig(concurrency=MAX_CONCURRENCY).concurrency == MAX_CONCURRENCY
    with pytest.raises(ValueError, match="at most 10,000, not 10,001"):
        BatchConfig(concurrency=MAX_CONCURRENCY + 1)


# --- paths are named as the user named them --------------------------------------------------


def test_lock_names_a_lock_it_cannot_write_as_given(copy: Path) -> None:
    """Fails on the old code: ``/tmp/.../retail/suite.lock: cannot write``."""
    (copy / "retail" / "suite.lock").mkdir()
    outcome = groundstate("lock", "retail", cwd=copy)
    assert_refused(outcome, "error: retail/suite.lock: cannot write")
    assert str(copy) not in outcome.text


def test_run_locked_without_a_lock_names_the_command_as_given(copy: Path) -> None:
    """Fails on the old code: ``groundstate lock /tmp/.../retail``."""
    outcome = groundstate("run", "retail", "--locked", "--system", SYSTEM, "--store", STORE,
                          cwd=copy)  # fmt: skip
    assert_refused(outcome, "lock the suite with `groundstate lock retail`")
    assert str(copy) not in outcome.text


def test_a_suite_given_from_a_sibling_folder_is_named_so(copy: Path) -> None:
    (copy / "elsewhere").mkdir()
    (copy / "retail" / "suite.lock").mkdir()
    outcome = groundstate("lock", "../retail", cwd=copy / "elsewhere")
    assert_refused(outcome, "error: ../retail/suite.lock: cannot write")


def test_a_suite_given_through_dot_dot_locks_and_is_named_so(copy: Path) -> None:
    """Fails on the old code: a traceback (``ValueError: '/w/retail/fixtures/retail.sql' is
    not in the subpath of '/w/elsewhere/../retail'``)."""
    (copy / "elsewhere").mkdir()
    outcome = groundstate("lock", "../retail", cwd=copy / "elsewhere")
    assert outcome.code == 0, outcome.text
    assert outcome.out.strip() == "locked 18 tasks in ../retail/suite.lock"
    assert (copy / "retail" / "suite.lock").is_file()


def test_a_suite_given_in_full_is_named_in_full(copy: Path) -> None:
    """Control: the path as given, so an absolute one stays absolute."""
    (copy / "retail" / "suite.lock").mkdir()
    outcome = groundstate("lock", copy / "retail", cwd=copy)
    assert_refused(outcome, f"error: {copy / 'retail' / 'suite.lock'}: cannot write")


def test_suite_shown_names_its_files_under_the_folder_as_given(retail: Path) -> None:
    import os

    here = Path.cwd()
    os.chdir(retail.parent)
    try:
        suite = load_suite(Path("retail"))
    finally:
        os.chdir(here)
    assert suite.root.is_absolute()
    assert suite.shown() == "retail"
    assert suite.shown(suite.root / "suite.lock") == "retail/suite.lock"
    assert suite.shown("/elsewhere/x.yaml") == "/elsewhere/x.yaml"


def test_play_refuses_an_unknown_task_before_making_a_store(copy: Path) -> None:
    """Fails on the old code: the store was made first (and the suite named in full)."""
    outcome = groundstate("play", "retail", "no-such-task", "--store", "new.db", cwd=copy)
    assert_refused(outcome, "error: retail: task: no task 'no-such-task'")
    assert str(copy) not in outcome.text
    assert not (copy / "new.db").exists()


def test_a_store_under_a_file_names_the_file_without_errno(copy: Path) -> None:
    """Fails on the old code: ``[Errno 20] retail/policy.md is a file, not a folder:
    'retail/policy.md'``."""
    outcome = groundstate("run", "retail", "--system", SYSTEM, "--store",
                          "retail/policy.md/s.db", "--task", "refund-socks", cwd=copy)  # fmt: skip
    assert_refused(outcome, "retail/policy.md is a file, not a folder")
    assert "Errno" not in outcome.text


# --- damaged files: one line naming the file and why, the store untouched ---------------------


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda w: (w / "retail/suite.yaml").write_bytes(b"name: caf\xe9\n"),
         "retail/suite.yaml: not UTF-8 text"),
        (lambda w: (w / "retail/suite.yaml").write_text(""),
         "retail/suite.yaml: the file is empty"),
        (lambda w: ((w / TASK_FILE).unlink(), (w / TASK_FILE).mkdir()),
         "retail/tasks/refund-socks.yaml: is a folder, not a file"),
        (lambda w: ((w / TASK_FILE).unlink(), (w / TASK_FILE).symlink_to("refund-socks.yaml")),
         "retail/tasks/refund-socks.yaml: a loop of symbolic links"),
        (lambda w: (w / TASK_FILE).write_text((w / TASK_FILE).read_text(), "utf-16"),
         "retail/tasks/refund-socks.yaml"),
        (lambda w: (w / "retail/tools.py").write_text("raise RuntimeError('boom')\n"),
         "retail/tools.py:1: importing failed: RuntimeError: boom"),
        (lambda w: (w / SYSTEM).write_bytes(b"\xef\xbb\xbf" + (w / SYSTEM).read_bytes()
                                             + b"\nfrobnicate: 1\n"),
         "systems/careful.yaml:"),
    ],
    ids=["suite-latin1", "suite-empty", "task-folder", "task-link-loop", "task-utf16",
         "tools-raise", "system-unknown-field"],
)  # fmt: skip
def test_a_damaged_file_is_refused_by_run_naming_it(copy: Path, damage: object, said: str) -> None:
    before = digest(copy / STORE)
    damage(copy)  # type: ignore[operator]
    outcome = groundstate("run", "retail", "--system", SYSTEM, "--store", STORE, cwd=copy)
    assert outcome.code == 2, outcome.text
    assert "Traceback" not in outcome.text
    assert said in outcome.text, outcome.text
    assert digest(copy / STORE) == before


def test_a_bom_before_a_task_or_suite_file_is_read_as_utf8(copy: Path) -> None:
    """False-positive guard: "UTF-8 with BOM" is UTF-8."""
    for name in (TASK_FILE, "retail/suite.yaml"):
        path = copy / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    outcome = groundstate("check", "retail", cwd=copy)
    assert outcome.code == 0, outcome.text


def test_a_missing_agent_file_is_named_without_dot_dot(copy: Path) -> None:
    """Fails on the old code: ``no file systems/../nowhere/retail_agents.py``."""
    _edit(copy / SYSTEM, "agents/", "nowhere/")
    outcome = groundstate("system", "hash", SYSTEM, cwd=copy)
    assert_refused(outcome, "harness.orchestration_loop.entry: no file nowhere/retail_agents.py")
    assert "/../" not in outcome.text

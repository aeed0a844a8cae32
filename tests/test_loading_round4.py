"""Round four of the loading audit: every command of the CLI against hostile paths and JSON.

The earlier loading tests break the files *inside* a suite. This driver walks the click group
instead: each command, at each path it takes (the suite or folder it reads, a file it reads,
a file or folder it writes, the store), is given a path that is not what it expects (missing,
a folder, empty, binary, not UTF-8, a symbolic-link loop, a link to nowhere, a path under a
regular file). Whatever the command, the user sees one line naming the path, exit 2, no
traceback, and the file given is left as it was. A test holds the matrix to the click group,
so a new command without cases fails here.

Then the JSON every reader takes from a user (fixtures, locks, τ² data, results, label
sheets) is given what ``json`` itself chokes on: nesting deeper than Python's stack, an
integer past Python's 4,300-digit limit, ``NaN``; and SQL fixtures a NUL character.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from groundstate.cli import main

from .conftest import BANK, BANK_SYSTEM

HERE = Path(__file__).parent
TAU_RETAIL = Path(
    os.environ.get("GROUNDSTATE_TAU2_DATA")
    or HERE.parent.parent / "shared" / "tau_data" / "tau2-bench" / "retail"
)  # as tests/test_tau2_suite.py finds it
TAXONOMY = HERE.parent / "src" / "groundstate" / "diagnosis" / "default_taxonomy.yaml"


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A store holding one batch of the bank suite: its path, the batch id and a run id."""
    store = tmp_path_factory.mktemp("stored") / "runs.db"
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM), "--store", str(store), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    with sqlite3.connect(store) as db:
        batch_id = db.execute("SELECT batch_id FROM batches").fetchone()[0]
        run_id = db.execute("SELECT run_id FROM runs").fetchone()[0]
    return store, batch_id, run_id


# --- hostile paths -----------------------------------------------------------------------

Maker = Callable[[Path], Path]


def _file(data: bytes) -> Maker:
    def make(folder: Path) -> Path:
        path = folder / "given.yaml"
        path.write_bytes(data)
        return path

    return make


def _missing(folder: Path) -> Path:
    return folder / "missing.yaml"


def _folder(folder: Path) -> Path:
    path = folder / "a-folder"
    path.mkdir()
    return path


def _loop(folder: Path) -> Path:
    (folder / "loop-a").symlink_to(folder / "loop-b")
    (folder / "loop-b").symlink_to(folder / "loop-a")
    return folder / "loop-a"


def _dangling(folder: Path) -> Path:
    (folder / "dangling").symlink_to(folder / "gone")
    return folder / "dangling"


def _under_a_file(folder: Path) -> Path:
    (folder / "plain").write_text("not a folder\n")
    return folder / "plain" / "inside"


PATHS: dict[str, Maker] = {
    "missing": _missing,
    "folder": _folder,
    "empty": _file(b""),
    "binary": _file(bytes(range(256)) * 4),
    "latin-1": _file("name: caf\xe9\n".encode("latin-1")),
    "loop": _loop,
    "dangling": _dangling,
    "under-a-file": _under_a_file,
}
READ_FILE = list(PATHS)
"""A file a command reads: every hostile path."""
READ_FOLDER = ["missing", "binary", "loop", "dangling", "under-a-file"]
"""A folder a command reads (a suite, τ²'s data): a file in its place, and the bad links."""
WRITE = ["loop", "under-a-file"]
"""A file or folder a command writes: it cannot be made there."""
WRITE_FILE = [*WRITE, "folder"]
STORE = ["folder", "binary", "loop", "dangling", "under-a-file"]
"""The store of a reading command."""
STORE_WRITTEN = ["folder", "binary", "loop", "under-a-file"]
"""The store of a writing command (a link to nowhere is followed, as by any program)."""


def _cases() -> Iterator[tuple[str, list[str], list[str]]]:
    """(command, arguments with {P} for the hostile path, {S} the store, {B} a batch id, {R}
    a run id, {T} a scratch folder; the hostile path kinds) for every path of every command."""
    store = ["--store", "{S}"]
    yield "agreement", ["agreement", "{B}", "--regrade", "{P}", *store], READ_FOLDER
    yield "batches", ["batches", "--store", "{P}"], STORE
    yield "check", ["check", "{P}"], READ_FOLDER
    yield "check", ["check", str(BANK), "--system", "{P}"], READ_FILE
    yield "check-env", ["check-env", "sqlite", "--fixture", "{P}"], READ_FILE
    yield "compare", ["compare", "{B}", "{B}", "--html", "{P}", *store], WRITE_FILE
    yield "compare", ["compare", "latest", "latest", "--store", "{P}"], STORE
    export = ["export", "{B}", "--format", "jsonl"]
    yield "export", [*export, "--out", "{P}", *store], WRITE_FILE
    export = ["export", "latest", "--format", "csv", "--out", "{T}/e.csv"]
    yield "export", [*export, "--store", "{P}"], STORE
    yield (
        "import-results",
        ["import-results", "{P}", "--name", "n", "--store", "{T}/i.db"],
        READ_FILE,
    )
    yield (
        "import-results",
        ["import-results", "{T}/r.csv", "--name", "n", "--store", "{P}"],
        STORE_WRITTEN,
    )
    yield "import-tau2", ["import-tau2", "{P}", "--into", "{T}/out"], READ_FOLDER
    if TAU_RETAIL.is_dir():
        tau2 = ["import-tau2", str(TAU_RETAIL), "--into", "{P}", "--sample", "1"]
        yield "import-tau2", tau2, WRITE
    yield "init", ["init", "{P}"], [*WRITE, "binary", "dangling"]
    tax = ["--taxonomy", str(TAXONOMY)]
    adjudicate = ["labels", "adjudicate"]
    yield "labels adjudicate", [*adjudicate, "{P}", "--adjudicator", "a", *tax, *store], READ_FILE
    yield "labels adjudicate", [*adjudicate, "{T}/r.csv", "--taxonomy", "{P}", *store], READ_FILE
    yield "labels agreement", ["labels", "agreement", "latest", "--store", "{P}"], STORE
    yield "labels import", ["labels", "import", "{P}", "--annotator", "a", *tax, *store], READ_FILE
    labels_import = ["labels", "import", "{T}/r.csv", "--annotator", "a"]
    yield "labels import", [*labels_import, "--taxonomy", "{P}", *store], READ_FILE
    yield (
        "labels regress",
        ["labels", "regress", "latest", "--into", "{T}/x", "--store", "{P}"],
        STORE,
    )
    yield "lock", ["lock", "{P}"], READ_FOLDER
    yield "plan", ["plan", "latest", "--store", "{P}"], STORE
    play = ["play", "{P}", "transfer", "--system", str(BANK_SYSTEM), "--store", "{T}/p.db"]
    yield "play", play, READ_FOLDER
    play = ["play", str(BANK), "transfer", "--as", "user", "--system", "{P}"]
    yield "play", [*play, "--store", "{T}/p.db"], READ_FILE
    yield "regress", ["regress", "{R}", "--into", "{P}", *store], WRITE
    yield "regress", ["regress", "{R}", "--into", "{T}/x", "--suite", "{P}", *store], READ_FOLDER
    yield "report", ["report", "{B}", "--html", "{P}", *store], WRITE_FILE
    yield "report", ["report", "--store", "{P}"], STORE
    yield "run", ["run", "{P}", "--system", str(BANK_SYSTEM), "--store", "{T}/r.db"], READ_FOLDER
    yield "run", ["run", str(BANK), "--system", "{P}", "--store", "{T}/r.db"], READ_FILE
    yield "run", ["run", str(BANK), "--system", str(BANK_SYSTEM), "--store", "{P}"], STORE_WRITTEN
    yield "runs", ["runs", "latest", "--store", "{P}"], STORE
    sample = ["sample-failures", "{B}", "--n", "1"]
    yield "sample-failures", [*sample, "--out", "{P}", *store], WRITE
    yield "sample-failures", [*sample, "--out", "{T}/s", "--taxonomy", "{P}", *store], READ_FILE
    yield "show", ["show", "{R}", "--store", "{P}"], STORE
    yield "system hash", ["system", "hash", "{P}"], READ_FILE
    yield "validate", ["validate", "{P}", "--store", "{T}/v.db"], READ_FOLDER
    yield "validate", ["validate", str(BANK), "--store", "{P}"], STORE_WRITTEN
    yield "verify", ["verify", "latest", "--store", "{P}"], STORE


CASES = list(_cases())


def _leaf_commands(group: click.Group, prefix: str = "") -> Iterator[str]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _leaf_commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}"


def test_every_command_of_the_cli_has_hostile_path_cases() -> None:
    assert sorted(set(_leaf_commands(main))) == sorted({command for command, _, _ in CASES})


def _snapshot(path: Path) -> bytes | None:
    """What a regular file given to a command holds (None for anything else)."""
    return path.read_bytes() if path.is_file() and not path.is_symlink() else None


@pytest.mark.parametrize(
    ("command", "template", "kinds"),
    CASES,
    ids=[f"{c}:{'-'.join(a for a in t if a.startswith('--') and a != '--store') or 'arg'}"
         f"{'(store)' if t[t.index('--store') + 1:][:1] == ['{P}'] else ''}"
         if "--store" in t else c for c, t, _ in CASES],
)  # fmt: skip
def test_a_hostile_path_is_one_line_naming_it_and_exit_2(
    command: str,
    template: list[str],
    kinds: list[str],
    stored: tuple[Path, str, str],
    tmp_path: Path,
) -> None:
    store, batch_id, run_id = stored
    failures = []
    for kind in kinds:
        scratch = tmp_path / kind
        scratch.mkdir()
        (scratch / "r.csv").write_text("task_id,success\ntransfer,1\n")
        given = PATHS[kind](scratch)
        before = _snapshot(given)
        fill = {"{P}": str(given), "{S}": str(store), "{B}": batch_id, "{R}": run_id}
        args = [fill.get(a, a).replace("{T}", str(scratch)) for a in template]
        result = CliRunner().invoke(main, args)
        problem = _problem(result, given)
        if problem is None and _snapshot(given) != before:
            problem = "the file given was changed"
        if problem is not None:
            failures.append(f"{kind}: {problem}: {result.output.strip()[-300:]!r}")
    assert not failures, "\n".join(failures)


def _problem(result: Result, given: Path) -> str | None:
    """What is wrong with a command's answer to a hostile path, or None."""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return f"raised {type(result.exception).__name__}: {result.exception}"
    output = result.output
    if "Traceback" in output:
        return "printed a traceback"
    if result.exit_code != 2:
        return f"exit {result.exit_code}"
    if given.name not in output:
        return "the message does not name the path"
    return None


# --- JSON and SQL that Python's own parsers choke on ---------------------------------------

DEEP = b'{"a":' * 3000 + b"1" + b"}" * 3000
HUGE = b'{"a": ' + b"7" * 5000 + b"}"
NAN = b'{"schema": "CREATE TABLE t(x)", "rows": {"t": [{"x": NaN}]}}'


@pytest.mark.parametrize(
    ("payload", "reason"),
    [(DEEP, "nested too deeply"), (HUGE, "4300 digits"), (NAN, "NaN is not a finite number")],
    ids=["deep", "huge-int", "nan"],
)
def test_a_json_fixture_json_cannot_parse_is_named_by_check_env(
    tmp_path: Path, payload: bytes, reason: str
) -> None:
    fixture = tmp_path / "fixture.json"
    fixture.write_bytes(payload)
    result = CliRunner().invoke(main, ["check-env", "sqlite", "--fixture", str(fixture)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {fixture}: not valid JSON: ")
    assert reason in result.output and len(result.output.splitlines()) == 1


def test_a_json_fixture_with_nan_in_a_suite_is_refused_not_stored_as_null(tmp_path: Path) -> None:
    """SQLite would store NaN as NULL: a fixture row would silently differ from its file."""
    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    sql = (suite / "fixtures" / "bank.sql").read_text()
    (suite / "fixtures" / "bank.sql").unlink()
    (suite / "fixtures" / "bank.json").write_text(
        json.dumps({"schema": sql, "rows": {}})[:-1] + ', "x": NaN}'
    )
    for task in (suite / "tasks").glob("*.yaml"):
        task.write_text(task.read_text().replace("bank.sql", "bank.json"))
    result = CliRunner().invoke(main, ["check", str(suite)])
    assert result.exit_code == 2, result.output
    assert f"{suite}/fixtures/bank.json" in result.output
    assert "NaN is not a finite number" in result.output and "Traceback" not in result.output


def test_a_well_formed_json_fixture_still_builds(tmp_path: Path) -> None:
    fixture = tmp_path / "fixture.json"
    rows = [{"x": 1.5}, {"x": 1e300}]  # large but finite numbers are numbers
    fixture.write_text(json.dumps({"schema": "CREATE TABLE t(x REAL)", "rows": {"t": rows}}))
    result = CliRunner().invoke(main, ["check-env", "sqlite", "--fixture", str(fixture)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("form", ["json", "yaml"])
def test_a_fixture_integer_past_64_bits_names_its_row(tmp_path: Path, form: str) -> None:
    """SQLite's INTEGER is 64 bits: Python raised OverflowError, which ended in a traceback."""
    fixture = tmp_path / f"fixture.{form}"
    data = {"schema": "CREATE TABLE t(x INTEGER)", "rows": {"t": [{"x": 1}, {"x": 2**63}]}}
    fixture.write_text(json.dumps(data))  # JSON is YAML too
    result = CliRunner().invoke(main, ["check-env", "sqlite", "--fixture", str(fixture)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 2
    reason = "Python int too large to convert to SQLite INTEGER"
    where = f"{fixture}:1" if form == "yaml" else str(fixture)  # YAML's loader knows the line
    assert result.output == f"error: {where}: rows.t[1]: {reason}\n"


@pytest.mark.parametrize("payload", [DEEP, HUGE], ids=["deep", "huge-int"])
@pytest.mark.parametrize("form", ["jsonl", "tau-bench", "tau2-bench"])
def test_results_json_cannot_parse_is_one_line_naming_the_file(
    tmp_path: Path, payload: bytes, form: str
) -> None:
    given = tmp_path / f"results.{'jsonl' if form == 'jsonl' else 'json'}"
    given.write_bytes(payload if form != "tau-bench" else b"[" + payload + b"]")
    args = ["import-results", str(given), "--format", form, "--name", "n"]
    result = CliRunner().invoke(main, [*args, "--store", str(tmp_path / "runs.db")])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert str(given) in result.output and len(result.output.splitlines()) == 1


def test_a_label_sheet_nested_too_deeply_names_its_line(
    tmp_path: Path, stored: tuple[Path, str, str]
) -> None:
    store = tmp_path / "runs.db"
    shutil.copy(stored[0], store)
    before = store.read_bytes()
    sheet = tmp_path / "sheet.jsonl"
    sheet.write_bytes(b"\n" + DEEP + b"\n")
    args = ["labels", "import", str(sheet), "--annotator", "a", "--taxonomy", str(TAXONOMY)]
    result = CliRunner().invoke(main, [*args, "--store", str(store)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output == f"error: {sheet}:2: not JSON: nested too deeply\n"
    assert store.read_bytes() == before  # nothing stored from a sheet refused


@pytest.mark.parametrize("payload", [DEEP, HUGE], ids=["deep", "huge-int"])
def test_a_lock_json_cannot_parse_is_an_unreadable_lock(tmp_path: Path, payload: bytes) -> None:
    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    (suite / "suite.lock").write_bytes(payload)
    checked = CliRunner().invoke(main, ["lock", str(suite), "--check"])
    assert checked.exception is None or isinstance(checked.exception, SystemExit)
    assert checked.exit_code == 1 and "suite.lock is unreadable" in checked.output
    args = ["run", str(suite), "--system", str(BANK_SYSTEM), "--locked"]
    locked = CliRunner().invoke(main, [*args, "--store", str(tmp_path / "runs.db")])
    assert locked.exception is None or isinstance(locked.exception, SystemExit)
    assert locked.exit_code == 2 and "suite.lock is unreadable" in locked.output
    assert not (tmp_path / "runs.db").exists()  # nothing ran against an unreadable lock


@pytest.mark.skipif(not TAU_RETAIL.is_dir(), reason="τ² data not in ../shared")
@pytest.mark.parametrize("name", ["tasks.json", "split_tasks.json"])
@pytest.mark.parametrize("payload", [DEEP, HUGE], ids=["deep", "huge-int"])
def test_tau2_data_json_cannot_parse_names_the_file(
    tmp_path: Path, name: str, payload: bytes
) -> None:
    data = tmp_path / "retail"
    shutil.copytree(TAU_RETAIL, data)
    (data / name).chmod(0o644)
    (data / name).write_bytes(payload)
    args = ["import-tau2", str(data), "--into", str(tmp_path / "out"), "--sample", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.startswith(f"error: {data / name}: not valid JSON: ")


@pytest.mark.parametrize("command", ["check", "check-env"])
def test_a_nul_in_an_sql_fixture_names_its_line(tmp_path: Path, command: str) -> None:
    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    fixture = suite / "fixtures" / "bank.sql"
    fixture.write_text(fixture.read_text() + "\nINSERT INTO accounts(id) VALUES ('a\0b');\n")
    line = fixture.read_text().count("\n", 0, fixture.read_text().index("\0")) + 1
    args = ["check", str(suite)]
    if command == "check-env":
        args = ["check-env", "sqlite", "--fixture", str(fixture)]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{fixture}:{line}: does not build: a NUL character" in result.output


def test_check_env_names_a_fixture_without_tables_once(tmp_path: Path) -> None:
    fixture = tmp_path / "empty.sql"
    fixture.write_text("-- nothing yet\n")
    result = CliRunner().invoke(main, ["check-env", "sqlite", "--fixture", str(fixture)])
    assert (result.exit_code, result.output) == (
        2,
        f"error: {fixture}: defines no table to probe\n",
    )


def test_check_env_names_a_broken_fixture_once_with_its_line(tmp_path: Path) -> None:
    fixture = tmp_path / "broken.sql"
    fixture.write_text("CREATE TABLE t(x INTEGER);\nINSERT INTO t VALUES (1;\n")
    result = CliRunner().invoke(main, ["check-env", "sqlite", "--fixture", str(fixture)])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {fixture}:2: does not build: ")
    assert len(result.output.splitlines()) == 1  # not once per contract test


def test_a_sound_fixture_still_runs_every_contract_test(tmp_path: Path) -> None:
    fixture = tmp_path / "sound.sql"
    fixture.write_text(
        "CREATE TABLE t(x INTEGER PRIMARY KEY, y TEXT);\nINSERT INTO t VALUES (1, 'a');\n"
    )
    result = CliRunner().invoke(main, ["check-env", "sqlite", "--fixture", str(fixture)])
    assert result.exit_code == 0, result.output
    assert "sqlite: conforms" in result.output


def test_regress_and_init_accept_a_link_to_a_folder(
    tmp_path: Path, stored: tuple[Path, str, str]
) -> None:
    """The near miss of the link cases: a link that leads to a folder is that folder."""
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")
    made = CliRunner().invoke(main, ["init", str(tmp_path / "linked")])
    assert made.exit_code == 0, made.output
    assert "made suite 'real'" in made.output and (tmp_path / "real" / "suite.yaml").is_file()
    (tmp_path / "cases").mkdir()
    (tmp_path / "to-cases").symlink_to(tmp_path / "cases")
    args = ["regress", stored[2], "--into", str(tmp_path / "to-cases"), "--store", str(stored[0])]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code in (0, 2) and "Traceback" not in result.output
    if result.exit_code == 0:
        assert any((tmp_path / "cases" / "tasks").glob("*.yaml"))


def test_an_unwritable_html_report_is_exit_2_after_the_report(
    tmp_path: Path, stored: tuple[Path, str, str]
) -> None:
    (tmp_path / "plain").write_text("")
    html = tmp_path / "plain" / "report.html"
    result = CliRunner().invoke(main, ["report", "--html", str(html), "--store", str(stored[0])])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith(f"error: {html}: cannot write: ")
    assert "Traceback" not in result.output


# --- arguments that are not paths --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["report", "{B}", "--seed", "-1"], "--seed"),
        (["compare", "{B}", "{B}", "--seed", "-1"], "--seed"),
        (["compare", "{B}", "{B}", "--fdr", "nan"], "--fdr"),
    ],
    ids=["report-negative-seed", "compare-negative-seed", "compare-nan-fdr"],
)
def test_a_number_numpy_or_a_range_would_trip_on_is_a_usage_error(
    args: list[str], named: str, stored: tuple[Path, str, str]
) -> None:
    store, batch_id, _ = stored
    given = [batch_id if a == "{B}" else a for a in args]
    result = CliRunner().invoke(main, [*given, "--store", str(store)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2 and named in result.output


def test_a_bootstrap_seed_takes_every_seed_of_its_range(stored: tuple[Path, str, str]) -> None:
    """Past 64 bits it worked once; since round 44 every --seed is 0 to 2^32 - 1 (usage error
    past it, tests/test_cli_round44.py)."""
    store, batch_id, _ = stored
    args = ["report", batch_id, "--seed", str(2**32 - 1), "--store", str(store)]
    assert CliRunner().invoke(main, args).exit_code == 0


def test_attempts_past_the_limit_are_refused_before_anything_is_planned(tmp_path: Path) -> None:
    """10^25 attempts was an out-of-memory kill of the whole process (exit 137)."""
    store = tmp_path / "runs.db"
    args = ["run", str(BANK), "--system", str(BANK_SYSTEM), "--attempts", "9" * 25]
    result = CliRunner().invoke(main, [*args, "--store", str(store)])
    assert result.exit_code == 2 and "--attempts" in result.output
    assert not store.exists()


def test_an_empty_environment_kind_is_shown_quoted_not_as_the_current_folder() -> None:
    result = CliRunner().invoke(main, ["check-env", ""])
    assert result.exit_code == 2
    assert result.output.startswith("error: KIND: unknown environment kind '' (known: ")


# --- Python checks that import but cannot give a verdict ------------------------------------


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("def money_conserved():\n    return True\n", "cannot be called as (s0, sT)"),
        ("def money_conserved(s0, sT, extra):\n    return True\n", "cannot be called as (s0, sT)"),
        ("class money_conserved:\n    pass\n", "is a class"),
        ("async def money_conserved(s0, sT):\n    return True\n", "is async"),
        ("def money_conserved(s0, sT):\n    yield True\n", "is a generator"),
    ],
    ids=["no-parameters", "three-required", "class", "async", "generator"],
)
def test_a_check_that_cannot_be_called_as_a_check_is_found_at_load(
    tmp_path: Path, code: str, reason: str
) -> None:
    """Before, `check` passed and every attempt ended as a grader failure for the same cause."""
    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    checks = suite / "checks.py"
    checks.write_text(checks.read_text() + "\n\n" + code)  # the later definition wins
    result = CliRunner().invoke(main, ["check", str(suite)])
    assert result.exit_code == 2
    line = f"{suite}/tasks/transfer.yaml:35: outcome_assertions[2].check: "
    assert f"{line}checks.py:money_conserved {reason}" in result.output


@pytest.mark.parametrize(
    "signature",
    ["(s0, sT)", "(*states)", "(s0, sT, extra=None)", "(s0, /, sT)", "(*args, **kwargs)"],
)
def test_checks_callable_as_a_check_in_any_spelling_still_load(
    tmp_path: Path, signature: str
) -> None:
    suite = tmp_path / "bank"
    shutil.copytree(BANK, suite)
    checks = suite / "checks.py"
    checks.write_text(
        checks.read_text() + f"\n\ndef money_conserved{signature}:\n    return True\n"
    )
    result = CliRunner().invoke(main, ["check", str(suite)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "args",
    [["show", ""], ["runs", ""], ["verify", ""], ["report", ""], ["regress", "", "--into", "x"]],
    ids=["show", "runs", "verify", "report", "regress"],
)
def test_an_empty_id_is_refused_not_taken_as_the_only_one(
    args: list[str], stored: tuple[Path, str, str]
) -> None:
    """`groundstate show "$RUN"` with RUN unset picked the store's only run without a word."""
    result = CliRunner().invoke(main, [*args, "--store", str(stored[0])])
    assert result.exit_code == 2
    assert result.output == "error: an empty id names nothing: give an id, or a prefix of one\n"

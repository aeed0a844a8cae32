"""Bad input, twenty-third round: what a refusal says when the file is not what it seems.

A fuzzing pass over every command (each task, suite and system file damaged every way: empty,
byte order marks, UTF-16, bytes that are not UTF-8, NUL, tabs, duplicate keys, alias bombs,
deep nesting, huge files, tags, folders, links to nowhere and loops of links; stores
truncated, full, read-only) found each refused with exit 2 and no traceback, but some said
the wrong thing or not where:

- a task file that is a link to nowhere or a loop of links was refused, and then the suite's
  ``canary`` (and a ``weights`` entry) was refused as "no task 'refund-socks' (did you mean
  'refund-socks'?)": a second, wrong report suggesting the very name refused. The "did you
  mean" helper never suggests the name itself now, and a task file that is there but does
  not load is reported once, as itself;
- a link to nowhere said "file not found" (``ls`` shows the file); a loop of links said it
  led "outside the suite folder". Both now say what they are, wherever a file is read;
- a ``suite.yaml`` that is a folder, a link to nowhere or a loop said "not a suite folder
  (no suite.yaml)";
- ``tools:`` naming a missing file or a folder named that file alone, not the field of
  suite.yaml that named it (as ``policy:`` is); a policy that is a folder was "no file";
- an integer past Python's 4,300 digits in a YAML file was refused without its line or
  field, advising ``sys.set_int_max_str_digits()`` (a call an author cannot make); in a
  results file too;
- a list or mapping as a key (``? [a, b]``) was refused naming PyYAML's node objects;
- a fixture whose database the harness cannot write (a full disk, a file size limit) was
  "does not build: [Errno 27] File too large", blaming the fixture.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from groundstate.errors import SpecError
from groundstate.spec.files import read_yaml
from groundstate.spec.strict import did_you_mean
from groundstate.spec.suite import scan_suite
from tests.cli_workspace import (
    COMMAND_SECONDS,
    STORE,
    SYSTEM,
    TASK,
    Outcome,
    assert_refused,
    digest,
    groundstate,
)

TASK_FILE = f"retail/tasks/{TASK}.yaml"


def _problems(root: Path) -> list[str]:
    _, found = scan_suite(root)
    return [str(problem) for problem in found]


def _batches(root: Path) -> str:
    listed = groundstate("batches", "--json", "--store", STORE, cwd=root)
    assert listed.code == 0, listed.text
    return listed.out


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (old, path)
    path.write_text(text.replace(old, new))


# --- a file that is a link to nowhere, or a loop of links --------------------------------


def _dangling(path: Path) -> None:
    path.unlink()
    path.symlink_to("nowhere.yaml")


def _loop(path: Path) -> None:
    path.unlink()
    path.symlink_to(path.name)


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (_dangling, "a link to nowhere.yaml, which does not exist"),
        (_loop, "a loop of symbolic links"),
    ],
)
def test_a_task_file_that_leads_nowhere_is_reported_once_as_itself(
    copy: Path, damage: object, said: str
) -> None:
    """The canary's task is the damaged one: "no task 'refund-socks' (did you mean
    'refund-socks'?)" was a second, wrong report."""
    damage(copy / TASK_FILE)  # type: ignore[operator]
    problems = _problems(copy / "retail")
    assert [p for p in problems if f"{TASK}.yaml" in p and said in p], problems
    assert not [p for p in problems if "canary" in p or "did you mean" in p], problems
    assert not [p for p in problems if "outside the suite folder" in p], problems


def test_a_weight_for_a_task_file_that_leads_nowhere_is_no_second_report(copy: Path) -> None:
    _replace(
        copy / "retail/suite.yaml",
        "canary: refund-socks",
        "canary: refund-socks\nweights:\n  refund-socks: 2",
    )
    _dangling(copy / TASK_FILE)
    problems = _problems(copy / "retail")
    assert not [p for p in problems if "weights" in p], problems
    assert [p for p in problems if "nowhere.yaml, which does not exist" in p], problems


def test_a_misspelt_canary_is_still_refused_with_its_suggestion(copy: Path) -> None:
    """Control: a canary naming no task file at all."""
    _replace(copy / "retail/suite.yaml", "canary: refund-socks", "canary: refund-sock")
    problems = _problems(copy / "retail")
    assert [
        p for p in problems if "canary: no task 'refund-sock' (did you mean 'refund-socks'?)" in p
    ], problems


def test_did_you_mean_never_suggests_the_name_refused() -> None:
    assert did_you_mean("refund-socks", ["refund-socks", "cancel-order"]) == ""
    # another close name is still a suggestion
    assert did_you_mean("refund-socks", ["refund-socks", "refund-sacks"]) == (
        " (did you mean 'refund-sacks'?)"
    )
    assert did_you_mean("refund-sock", ["refund-socks"]) == " (did you mean 'refund-socks'?)"


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda p: (p.unlink(), p.mkdir()), "suite.yaml: is a folder, not a file"),
        (_dangling, "suite.yaml: a link to nowhere.yaml, which does not exist"),
        (_loop, "suite.yaml: a loop of symbolic links"),
    ],
)
def test_a_suite_yaml_that_is_no_file_is_named_with_what_it_is(
    copy: Path, damage: object, said: str
) -> None:
    damage(copy / "retail/suite.yaml")  # type: ignore[operator]
    problems = _problems(copy / "retail")
    assert len(problems) == 1 and said in problems[0], problems
    assert "not a suite folder" not in problems[0]


def test_a_folder_with_no_suite_yaml_is_still_not_a_suite_folder(tmp_path: Path) -> None:
    """Control."""
    assert _problems(tmp_path) == [f"{tmp_path}: not a suite folder (no suite.yaml)"]


def test_a_missing_file_that_is_no_link_is_still_not_found(tmp_path: Path) -> None:
    """Control: only a link names its target."""
    with pytest.raises(SpecError, match=r"missing\.yaml: file not found$"):
        read_yaml(tmp_path / "missing.yaml")


def test_a_system_file_that_is_a_link_to_nowhere_says_so(copy: Path) -> None:
    (copy / "systems" / "gone.yaml").symlink_to("careful-was-here.yaml")
    refused = groundstate("system", "hash", "systems/gone.yaml", cwd=copy)
    assert_refused(
        refused, "systems/gone.yaml: a link to careful-was-here.yaml, which does not exist"
    )
    assert refused.code == 2


# --- the file suite.yaml names is no file: the field that names it -----------------------


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("tools", "nothere.py", "tools: no file nothere.py"),
        ("tools", "fixtures", "tools: fixtures: is a folder, not a file"),
        ("policy", "fixtures", "policy: fixtures: is a folder, not a file"),
        ("policy", "nope.md", "policy: no file nope.md"),  # control: as before
    ],
)
def test_a_file_suite_yaml_names_that_is_no_file_is_that_field_s_problem(
    copy: Path, field: str, value: str, said: str
) -> None:
    default = {"tools": "tools: tools.py", "policy": "policy: policy.md"}[field]
    _replace(copy / "retail/suite.yaml", default, f"{field}: {value}")
    problems = _problems(copy / "retail")
    assert [p for p in problems if p.startswith(f"{copy / 'retail/suite.yaml'}:") and said in p], (
        problems
    )


# --- values Python refuses to make, keys that are no names --------------------------------

LONG = "9" * 5000


def test_an_integer_past_4300_digits_is_refused_at_its_line_and_field(copy: Path) -> None:
    _replace(copy / TASK_FILE, "step_limit: 20", f"step_limit: {LONG}")
    before = digest(copy / STORE)
    refused = groundstate(
        "run", "retail", "--system", SYSTEM, "--task", TASK, "--store", STORE, cwd=copy
    )
    assert_refused(
        refused,
        f"{TASK}.yaml:36: step_limit: an integer of 5000 digits: past the limit of 4300 digits",
    )
    assert refused.code == 2
    assert "set_int_max_str_digits" not in refused.text
    assert digest(copy / STORE) == before


def test_an_integer_past_4300_digits_deep_in_a_system_file_names_its_field(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        f"name: x\nmodel:\n  decoding: {{seeds: [1, {{a: {LONG}}}]}}\n"
    )
    with pytest.raises(SpecError) as refused:
        read_yaml(tmp_path / "s.yaml")
    assert refused.value.line == 3
    assert refused.value.field == "model.decoding.seeds[1].a"
    assert "set_int_max_str_digits" not in str(refused.value)


def test_an_integer_past_4300_digits_in_a_results_file_says_so_plainly(copy: Path) -> None:
    (copy / "big.jsonl").write_text('{"task_id": "a", "attempt": ' + LONG + "}\n")
    before = digest(copy / STORE)
    refused = groundstate("import-results", "big.jsonl", "--name", "q", "--store", STORE, cwd=copy)
    assert_refused(refused, "big.jsonl", "an integer of 5000 digits: past the limit of 4300 digits")
    assert "set_int_max_str_digits" not in refused.text
    assert digest(copy / STORE) == before


@pytest.mark.parametrize("key", ["? [a, b]\n: c\n", "? {a: 1}\n: c\n", "zz:\n  ? [a]\n  : c\n"])
def test_a_list_or_mapping_as_a_key_is_refused_at_its_line_in_plain_words(
    tmp_path: Path, key: str
) -> None:
    (tmp_path / "t.yaml").write_text("task_id: t\n" + key)
    with pytest.raises(SpecError) as refused:
        read_yaml(tmp_path / "t.yaml")
    assert refused.value.line == 2 + key.startswith("zz")
    assert "a key that is a list or a mapping" in str(refused.value)
    assert "Node" not in str(refused.value)


def test_a_duplicate_key_is_still_refused(tmp_path: Path) -> None:
    """Control: the key check was rewritten around the list-as-key refusal."""
    (tmp_path / "t.yaml").write_text("a: 1\nb: 2\na: 3\n")
    with pytest.raises(SpecError, match="duplicate key 'a'") as refused:
        read_yaml(tmp_path / "t.yaml")
    assert refused.value.line == 3


# --- the harness cannot write a fixture's database: not the fixture's fault ---------------


LIMITED = (
    "import os, resource, sys;"
    " resource.setrlimit(resource.RLIMIT_FSIZE, (40 * 1024, 40 * 1024));"
    " os.execv(sys.executable, [sys.executable, '-m', 'groundstate', *sys.argv[1:]])"
)
"""``groundstate ARGS`` with files limited to 40 KiB, set in the child itself (no
``preexec_fn``: a fork with the test process's threads)."""


def _groundstate_limited(root: Path, *args: str) -> Outcome:
    """``groundstate ARGS`` with files limited to 40 KiB (the retail fixture's database is
    larger): a full disk, as the process meets it."""
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, *args],
        cwd=root,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=COMMAND_SECONDS,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TMPDIR": str(root / "tmp")},
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def test_a_fixture_database_the_harness_cannot_write_is_not_the_fixture_s_fault(
    copy: Path,
) -> None:
    (copy / "tmp").mkdir()
    before = digest(copy / STORE)
    refused = _groundstate_limited(
        copy, "run", "retail", "--system", SYSTEM, "--task", TASK, "--store", STORE
    )
    assert_refused(refused, "retail.sql", "cannot be written to the harness's work folder")
    assert refused.code == 2
    assert "does not build" not in refused.text
    assert digest(copy / STORE) == before


# --- a system whose agent cannot be built: located as `check` locates it -----------------


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("../agents/retail_agents.py:nope", "names no callable"),
        ("os.path:join", "missing a required argument"),  # a callable of the wrong signature
    ],
)
def test_a_system_whose_agent_cannot_be_built_is_refused_at_its_line(
    copy: Path, entry: str, said: str
) -> None:
    _replace(copy / SYSTEM, "../agents/retail_agents.py:careful", entry)
    before = _batches(copy)  # the suite's validation may be cached first: no record
    refused = groundstate(
        "run", "retail", "--system", SYSTEM, "--task", TASK, "--store", STORE, cwd=copy
    )
    assert_refused(refused, f"{SYSTEM}:1", "harness.orchestration_loop", said)
    assert refused.code == 2
    assert _batches(copy) == before

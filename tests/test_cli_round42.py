"""Command-line input, forty-second round: batch arguments that are names, and run options
refused only after validation had run.

- Batch ids are hex. With batches imported as ``a`` and ``b``, ``compare a b`` read the
  batches whose ids start with ``a`` and ``b`` (maybe reversed, maybe others) without a word;
  a name was never read at all. Now an argument is a full id, or picks exactly one batch among
  those whose id starts with it and those so named; more than one is refused, each named.
- ``run --concurrency 99999999999999999999`` validated the tasks and cached the results in
  the store before the executor refused the concurrency; ``run --resume ID`` with no store
  made an empty one before saying the batch is not there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_workspace import (
    STORE,
    SYSTEM,
    TASK,
    assert_refused,
    digest,
    groundstate,
    make_workspace,
    spoilable_copy,
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Batches imported as ``first``, ``second`` and ``twice``."""
    return make_workspace(tmp_path_factory.mktemp("pristine"), ("first", "second", "twice"))


@pytest.fixture
def copy(pristine: Path, tmp_path: Path) -> Path:
    return spoilable_copy(pristine, tmp_path)


def _ids(workspace: Path) -> dict[str, list[str]]:
    """Each stored name's batch ids, oldest first."""
    listed = groundstate("batches", "--json", "--store", STORE, cwd=workspace)
    assert listed.code == 0, listed.text
    named: dict[str, list[str]] = {}
    for batch in json.loads(listed.out):
        named.setdefault(batch["suite"], []).append(batch["batch_id"])
    return named


def _import(workspace: Path, name: str, results: str = "results.jsonl") -> str:
    made = groundstate("import-results", results, "--name", name, "--store", STORE,
                       cwd=workspace)  # fmt: skip
    assert made.code == 0, made.text
    return made.out.strip().splitlines()[-1].removeprefix("batch ")


# --- a name that is also the start of another batch's id -------------------------------------


READERS = [
    ["report", "{}"],
    ["compare", "{}", "second"],
    ["compare", "second", "{}"],
    ["runs", "{}"],
    ["verify", "{}"],
    ["export", "{}", "--format", "jsonl", "--out", "out.jsonl"],
]


@pytest.mark.parametrize("command", READERS, ids=lambda c: "-".join(c[:3]))
def test_a_name_that_prefixes_another_batchs_id_is_refused_naming_both(
    copy: Path, command: list[str]
) -> None:
    """Fails on the old code: the batch whose id starts so was read, the named one ignored."""
    first = _ids(copy)["first"][0]
    given = first[:2]
    named = _import(copy, given)  # a batch named as the start of another's id
    before = digest(copy / STORE)
    args = [part.format(given) for part in command]
    outcome = groundstate(*args, "--store", STORE, cwd=copy)
    assert outcome.code == 2, outcome.text
    assert_refused(outcome, f"batch {given!r} is ambiguous", first, named,
                   f"id starts with {given!r}", f"named {given!r}", "created")  # fmt: skip
    assert digest(copy / STORE) == before
    assert not (copy / "out.jsonl").exists()


def test_a_longer_prefix_or_the_full_id_then_picks_one(copy: Path) -> None:
    """The way out the refusal names. False-positive guard: a full id is never ambiguous, even
    when another batch is named with it."""
    first = _ids(copy)["first"][0]
    _import(copy, first[:2])
    impostor = _import(copy, first)  # named with the full id of another batch
    for given in (first[:6], first):
        outcome = groundstate("report", given, "--json", "--store", STORE, cwd=copy)
        assert outcome.code == 0, outcome.text
        assert json.loads(outcome.out)["batch_id"] == first
    assert impostor != first


# --- names ----------------------------------------------------------------------------------


def test_compare_by_name_reads_each_side_as_named(copy: Path) -> None:
    """Fails on the old code: ``no batch first`` (names were never read)."""
    ids = _ids(copy)
    for a, b in (("first", "second"), ("second", "first")):
        outcome = groundstate("compare", a, b, "--json", "--store", STORE, cwd=copy)
        assert outcome.code == 0, outcome.text
        data = json.loads(outcome.out)
        assert (data["batch_a"], data["batch_b"]) == (ids[a][0], ids[b][0])


@pytest.mark.parametrize("command", [["report"], ["runs"], ["verify"]])
def test_a_unique_name_picks_its_batch(copy: Path, command: list[str]) -> None:
    second = _ids(copy)["second"][0]
    outcome = groundstate(*command, "second", "--store", STORE, cwd=copy)
    assert outcome.code == 0, outcome.text
    assert second in outcome.out


def test_a_name_of_several_batches_is_refused_listing_each(copy: Path) -> None:
    row = {"task_id": "a", "attempt": 1, "success": False, "terminal_reason": "agent_failure"}
    (copy / "other.jsonl").write_text(json.dumps(row) + "\n")
    _import(copy, "twice", "other.jsonl")  # the same name again (a suite run twice)
    twice = _ids(copy)["twice"]
    assert len(twice) == 2
    before = digest(copy / STORE)
    outcome = groundstate("compare", "first", "twice", "--store", STORE, cwd=copy)
    assert_refused(outcome, "batch 'twice' is ambiguous: 2 batches match", *twice)
    assert outcome.code == 2
    assert digest(copy / STORE) == before


def test_a_unique_id_prefix_still_reads_as_before(copy: Path) -> None:
    """False-positive guard: a prefix that names no batch and starts one id."""
    ids = _ids(copy)
    first, second = ids["first"][0], ids["second"][0]
    cut = next(n for n in range(1, len(first)) if not any(
        other.startswith(first[:n]) for name in ids for other in ids[name] if other != first
    ))  # fmt: skip
    outcome = groundstate("compare", first[:cut], second, "--json", "--store", STORE, cwd=copy)
    assert outcome.code == 0, outcome.text
    assert json.loads(outcome.out)["batch_a"] == first


@pytest.mark.parametrize("given", ["zz", "First", "fir", "%", "_"])
def test_no_match_is_no_batch(copy: Path, given: str) -> None:
    """A name is matched whole and exactly (no case folding, no prefix of a name, no
    wildcard)."""
    before = digest(copy / STORE)
    outcome = groundstate("report", given, "--store", STORE, cwd=copy)
    assert_refused(outcome, f"no batch {given} in the run store")
    assert digest(copy / STORE) == before


def test_a_batch_whose_record_is_no_json_is_still_found_by_id(copy: Path) -> None:
    """verify reads ids from the table: a record spoiled by hand does not hide its batch, nor
    break the name lookup of the others."""
    import sqlite3

    ids = _ids(copy)
    first = ids["first"][0]
    db = sqlite3.connect(copy / STORE)
    with db:
        db.execute("UPDATE batches SET record = 'not json' WHERE batch_id = ?", (first,))
    db.close()
    outcome = groundstate("verify", first[:8], "--store", STORE, cwd=copy)
    assert first in outcome.out, outcome.text
    assert outcome.code == 1  # altered, named as such
    named = groundstate("verify", "second", "--store", STORE, cwd=copy)
    assert named.code == 0, named.text
    assert ids["second"][0] in named.out


# --- run options refused before any work ----------------------------------------------------


RUN = ["run", "retail", "--system", SYSTEM, "--task", TASK, "--store", STORE]


@pytest.mark.parametrize("executor", ["in-process", "process"])
@pytest.mark.parametrize("concurrency", ["99999999999999999999", str(2**62)])
def test_an_impossible_concurrency_is_refused_before_validation(
    copy: Path, executor: str, concurrency: str
) -> None:
    """Fails on the old code: validation ran and cached its results in the store first. (Since
    round 43 past ``--concurrency``'s bound, 10,000, on every executor: the usage error.)"""
    before = digest(copy / STORE)
    outcome = groundstate(*RUN, "--concurrency", concurrency, "--executor", executor, cwd=copy)
    assert outcome.code == 2, outcome.text
    assert "Invalid value for '--concurrency'" in outcome.err, outcome.text
    assert "Traceback" not in outcome.text
    assert digest(copy / STORE) == before


def test_an_impossible_concurrency_makes_no_store(copy: Path) -> None:
    (copy / STORE).unlink()
    outcome = groundstate(*RUN, "--concurrency", "99999999999999999999", cwd=copy)
    assert outcome.code == 2 and "'--concurrency'" in outcome.err, outcome.text
    assert not (copy / STORE).exists()


def test_a_resume_without_a_store_makes_none(copy: Path) -> None:
    """Fails on the old code: an empty store was made, then the batch was not found in it."""
    (copy / STORE).unlink()
    outcome = groundstate("run", "retail", "--system", SYSTEM, "--resume", "abc",
                          "--store", STORE, cwd=copy)  # fmt: skip
    assert outcome.code == 2, outcome.text
    assert_refused(outcome, "no run store")
    assert not (copy / STORE).exists()


def test_a_resume_of_no_such_batch_leaves_the_store(copy: Path) -> None:
    before = digest(copy / STORE)
    outcome = groundstate("run", "retail", "--system", SYSTEM, "--resume", "zz",
                          "--store", STORE, cwd=copy)  # fmt: skip
    assert_refused(outcome, "no batch zz")
    assert digest(copy / STORE) == before


def test_a_fitting_concurrency_still_runs(copy: Path) -> None:
    """False-positive guard."""
    outcome = groundstate(*RUN, "--concurrency", "4", cwd=copy)
    assert outcome.code == 0, outcome.text


def test_a_resume_takes_the_same_rule(copy: Path) -> None:
    """``run --resume NAME`` reads the named batch (here refused as an import, by its id); a
    name that is also the start of another id is refused before anything runs."""
    first = _ids(copy)["first"][0]
    base = ["run", "retail", "--system", SYSTEM, "--store", STORE, "--resume"]
    named = groundstate(*base, "first", cwd=copy)
    assert_refused(named, f"cannot resume batch {first}", "imported")
    _import(copy, first[:2])
    before = digest(copy / STORE)
    ambiguous = groundstate(*base, first[:2], cwd=copy)
    assert ambiguous.code == 2, ambiguous.text
    assert_refused(ambiguous, f"batch {first[:2]!r} is ambiguous", first)
    assert digest(copy / STORE) == before

"""Checking a stored record parses it once (its canonical hash and its artifact names come from
the same parse): every verdict of ``verify`` is what parsing it twice gave, for records and
labels edited by hand in every way the check tells apart. (The write path's bytes are held by
tests/test_store_equivalence.py.)"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groundstate.store import RunLabels, RunStore, record_hash

from .test_store_groups import _first_batch
from .test_verify_seal import import_batch

Edit = Callable[[str], str | bytes]


def _sql(store: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with sqlite3.connect(store) as db:
        rows = db.execute(sql, params).fetchall()
    db.close()
    return rows


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A store holding one small bank batch (built once; each test works on a copy)."""
    folder = tmp_path_factory.mktemp("made")
    with RunStore(folder / "runs.db") as store:
        batch_id, _ = _first_batch(store, attempts=1)
    return folder, batch_id


@pytest.fixture
def stored(made: tuple[Path, str], tmp_path: Path) -> tuple[Path, str, str]:
    """A copy of the made store, its batch, and the run whose record the test edits."""
    folder, batch_id = made
    shutil.copytree(folder, tmp_path / "store")
    path = tmp_path / "store" / "runs.db"
    (run_id,) = _sql(path, "SELECT run_id FROM runs WHERE seq = 1 AND batch_id = ?", (batch_id,))[0]
    return path, batch_id, run_id


def _reordered(text: str) -> str:
    return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))


def _swap_artifacts(text: str) -> str:
    data = json.loads(text)
    names = sorted(data["artifact_locations"])
    assert len(names) == 2, names
    first, second = (data["artifact_locations"][name] for name in names)
    data["artifact_locations"] = {names[0]: second, names[1]: first}
    return json.dumps(data)


def _with(key: str, value: Any) -> Edit:
    def edit(text: str) -> str:
        return json.dumps(json.loads(text) | {key: value})

    return edit


EDITS: dict[str, tuple[Edit, bool, set[str]]] = {
    # name: (the edit, whether record_hash is recomputed to match, the kinds verify names)
    "pretty printed": (lambda t: json.dumps(json.loads(t), indent=2), False, set()),
    "keys sorted, no spaces": (_reordered, False, set()),
    "non-ASCII escaped": (lambda t: json.dumps(json.loads(t), ensure_ascii=True), False, set()),
    "a value changed": (lambda t: t.replace('"attempt":1', '"attempt":7', 1), False,
                        {"record_altered"}),
    "a value changed, rehashed": (lambda t: t.replace('"attempt":1', '"attempt":7', 1), True,
                                  {"chain_broken"}),
    "truncated": (lambda t: t[: len(t) // 2], False, {"record_unreadable"}),
    "empty": (lambda t: "", False, {"record_unreadable"}),
    "not UTF-8": (lambda t: t.encode("utf-8")[:-1] + b"\xff}", False, {"record_unreadable"}),
    "UTF-16": (lambda t: t.encode("utf-16"), False, {"record_unreadable"}),
    "artifacts swapped, rehashed": (_swap_artifacts, True, {"chain_broken", "record_altered"}),
    "artifacts dropped, rehashed": (_with("artifact_locations", {}), True,
                                    {"chain_broken", "record_altered"}),
    "a JSON list, rehashed": (lambda t: "[1, 2]", True, {"chain_broken", "record_altered"}),
    "artifacts a list, rehashed": (_with("artifact_locations", ["sha256:0"]), True,
                                   {"chain_broken", "record_altered"}),
    "artifacts a string, rehashed": (_with("artifact_locations", "sha256:0"), True,
                                     {"chain_broken", "record_altered"}),
    "a NaN, rehashed": (lambda t: t.replace('"cost":0.0', '"cost":NaN', 1), True,
                        {"chain_broken"}),
    "a lone surrogate, rehashed": (_with("final_message", "\ud800"), True, {"chain_broken"}),
    "a lone surrogate": (_with("final_message", "\ud800"), False, {"record_altered"}),
}  # fmt: skip


@pytest.mark.parametrize("edit, rehash, kinds", EDITS.values(), ids=list(EDITS))
def test_verify_names_what_it_named_when_it_parsed_each_record_twice(
    stored: tuple[Path, str, str], edit: Edit, rehash: bool, kinds: set[str]
) -> None:
    path, batch_id, run_id = stored
    (text,) = _sql(path, "SELECT record FROM runs WHERE run_id = ?", (run_id,))[0]
    edited = edit(text)
    assert edited != text, "the edit changed nothing"
    if rehash:
        assert isinstance(edited, str)
        _sql(
            path, "UPDATE runs SET record_hash = ? WHERE run_id = ?", (record_hash(edited), run_id)
        )
    _sql(path, "UPDATE runs SET record = ? WHERE run_id = ?", (edited, run_id))
    with RunStore(path) as store:
        found = store.verify(batch_id).problems
    assert {p.kind for p in found} == kinds, [p.line() for p in found]
    assert all(p.run_id == run_id for p in found if p.kind != "chain_broken")


def test_an_untouched_batch_verifies_with_every_record_and_artifact_read(
    stored: tuple[Path, str, str],
) -> None:
    path, batch_id, _ = stored
    with RunStore(path) as store:
        check = store.verify(batch_id)
    (runs,) = _sql(path, "SELECT COUNT(*) FROM runs WHERE batch_id = ?", (batch_id,))[0]
    assert check.ok and check.records == runs and check.artifacts >= runs


def _label(batch_id: str, run_id: str, annotator: str) -> RunLabels:
    return RunLabels(
        batch_id=batch_id, run_id=run_id, annotator=annotator, taxonomy="default@1",
        labels=["planning"], created_at="2026-01-01T00:00:00Z",
    )  # fmt: skip


LABEL_EDITS: dict[str, tuple[Callable[[str], str], bool, bool]] = {
    # name: (the edit, whether record_hash is recomputed, whether verify names it altered)
    "pretty printed": (lambda t: json.dumps(json.loads(t), indent=1), False, False),
    "truncated": (lambda t: t[:-1], False, True),
    "a label changed": (lambda t: t.replace("planning", "recovery"), False, True),
    "its annotator changed, rehashed": (lambda t: t.replace('"ann"', '"eve"'), True, True),
    # hashing right but not an object: named, where verify used to stop on a traceback
    "a JSON list, rehashed": (lambda t: "[]", True, True),
    "a JSON string, rehashed": (lambda t: '"planning"', True, True),
}


@pytest.mark.parametrize("edit, rehash, altered", LABEL_EDITS.values(), ids=list(LABEL_EDITS))
def test_labels_are_checked_from_one_parse_as_from_two(
    tmp_path: Path, edit: Callable[[str], str], rehash: bool, altered: bool
) -> None:
    path, batch_id = import_batch(tmp_path, tasks=1, attempts=1)
    with RunStore(path) as store:
        (run,) = store.runs(batch_id)
        store.add_labels([_label(batch_id, run.run_id, "ann")])
    (text,) = _sql(path, "SELECT record FROM labels")[0]
    edited = edit(text)
    assert edited != text
    if rehash:  # the chain then breaks too; the row's own check is what is tested here
        _sql(path, "UPDATE labels SET record_hash = ?", (record_hash(edited),))
    _sql(path, "UPDATE labels SET record = ?", (edited,))
    with RunStore(path) as store:
        found = store.verify(batch_id).problems
    altered_rows = [p for p in found if p.kind == "labels_altered" and p.run_id is not None]
    assert bool(altered_rows) == altered, [p.line() for p in found]

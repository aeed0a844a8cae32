"""Twenty-second environments audit.

- A fixture was hashed by one read and built from another (``postgres._template`` hashed
  the file, then the build read it again; the SQLite kind's build did the same behind its
  hash cache): a fixture replaced in between was built under the hash of what it no longer
  held, and every later environment of the old content restored the new one. The bytes are
  now read once, hashed and built from.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groundstate.environments.sqlite import SqliteEnvironment

from .envs_differential import CLOCK
from .test_validation_round15 import _postgres

# --- a fixture replaced between two reads ---------------------------------------------------------


def _fixture_text(value: str) -> str:
    return (
        f"CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);\nINSERT INTO a VALUES (1, '{value}');\n"
    )


def _replaced_after_first_read(
    monkeypatch: pytest.MonkeyPatch, path: Path, replacement: str
) -> None:
    """The first read of *path* (by ``read_bytes`` or ``open``) reads what it holds; the file
    is then replaced (written aside and renamed over it, as an editor or ``git checkout``
    does), so that any later read sees *replacement*."""
    done: list[bool] = []

    def replace() -> None:
        if not done:
            done.append(True)
            aside = path.with_name(path.name + ".new")
            aside.write_text(replacement)
            os.replace(aside, path)

    original_open: Callable[..., Any] = Path.open
    original_read_bytes: Callable[..., bytes] = Path.read_bytes

    def open_(self: Path, *args: Any, **kwargs: Any) -> Any:
        handle = original_open(self, *args, **kwargs)
        if self == path:
            replace()  # the open handle still reads the file it opened
        return handle

    def read_bytes(self: Path) -> bytes:
        data = original_read_bytes(self)
        if self == path:
            replace()
        return data

    monkeypatch.setattr(Path, "open", open_)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)


def _values(env: Any) -> list[Any]:
    return [row[0] for row in env.evaluator_view().query("SELECT v FROM a ORDER BY id")]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_fixture_replaced_between_reads_is_built_from_what_was_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Replaced right after the first read: the environment is built from one of the two
    contents, and each content later gets its own (before, the old content's hash held the
    new content's build: an environment of the old file restored the new one)."""
    make = SqliteEnvironment if kind == "sqlite" else _postgres()
    old, new = f"old-{uuid.uuid4().hex}", f"new-{uuid.uuid4().hex}"  # no build of either yet
    path = tmp_path / "t.sql"
    path.write_text(_fixture_text(old))
    _replaced_after_first_read(monkeypatch, path, _fixture_text(new))
    with make(path, clock=CLOCK) as env:
        assert _values(env) in ([old], [new])
    monkeypatch.undo()
    assert path.read_text() == _fixture_text(new)
    with make(path, clock=CLOCK) as env:
        assert _values(env) == [new]
    path.write_text(_fixture_text(old))
    with make(path, clock=CLOCK) as env:
        assert _values(env) == [old]
    path.write_text(_fixture_text(new))
    with make(path, clock=CLOCK) as env:
        assert _values(env) == [new]


def test_the_postgres_kind_builds_what_it_hashed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PostgreSQL kind reads the fixture once: the environment is the content its
    template's key hashed (the first read), not what the file held at a second read."""
    postgres = _postgres()
    old, new = f"old-{uuid.uuid4().hex}", f"new-{uuid.uuid4().hex}"
    path = tmp_path / "t.sql"
    path.write_text(_fixture_text(old))
    _replaced_after_first_read(monkeypatch, path, _fixture_text(new))
    with postgres(path, clock=CLOCK) as env:
        assert _values(env) == [old]


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_data_fixture_is_built_from_the_bytes_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    """Control: a YAML or JSON fixture builds as before (its bytes read once, then parsed by
    the same loaders), and its limits and errors are the same."""
    value = uuid.uuid4().hex
    path = tmp_path / f"t{suffix}"
    schema = "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);"
    if suffix == ".json":
        path.write_text(f'{{"schema": "{schema}", "rows": {{"a": [{{"id": 1, "v": "{value}"}}]}}}}')
    else:
        path.write_text(f"schema: '{schema}'\nrows:\n  a:\n    - {{id: 1, v: '{value}'}}\n")
    for make in (SqliteEnvironment, _postgres()):
        with make(path, clock=CLOCK) as env:
            assert _values(env) == [value]
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    with pytest.raises(Exception, match="the file is empty"):
        SqliteEnvironment(empty, clock=CLOCK).close()

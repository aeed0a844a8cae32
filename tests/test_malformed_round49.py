"""Bad input, forty-ninth round: a file with many errors took time quadratic in their number.

- Each error found after a YAML file was read is given its line by ``line_of``, which
  composed the whole file again for every error and searched each mapping key by key: a task
  file of 300,000 unknown keys (3 MB, under the 10 MiB limit) kept ``check`` busy for hours,
  5,000 of them for minutes. The file is composed once now (kept by its path and stat) and
  each mapping's keys indexed once.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from groundstate.spec import files
from groundstate.spec.files import line_of
from groundstate.validation.static import check_suite
from tests.conftest import EXAMPLES

KEYS = 400


@pytest.fixture
def many_unknown_keys(tmp_path: Path) -> Path:
    """The retail suite with :data:`KEYS` unknown fields appended to one task file."""
    suite = tmp_path / "retail"
    shutil.copytree(EXAMPLES / "retail", suite)
    task = suite / "tasks" / "refund-socks.yaml"
    task.write_text(task.read_text() + "".join(f"k{i}: 1\n" for i in range(KEYS)))
    return suite


def test_each_of_many_errors_is_located_without_composing_the_file_again(
    many_unknown_keys: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails on the old code: the task file was composed once per error (400 times)."""
    composed: list[str] = []
    compose = yaml.compose

    def counted(stream: str, Loader: type) -> yaml.Node | None:  # yaml's keyword name
        composed.append(stream[:20])
        return compose(stream, Loader=Loader)

    monkeypatch.setattr(files.yaml, "compose", counted)
    check = check_suite(many_unknown_keys)
    unknown = [p for p in check.problems if p.reason.startswith("unknown field")]
    assert len(unknown) == KEYS
    first = (many_unknown_keys / "tasks" / "refund-socks.yaml").read_text().count("\n") - KEYS
    assert sorted(p.line for p in unknown if p.line) == list(range(first + 1, first + KEYS + 1))
    assert len(composed) < 5, len(composed)


def test_a_file_changed_since_it_was_composed_is_composed_again(tmp_path: Path) -> None:
    """Honest: the kept file is known by its stat; an edit (other size) is read afresh."""
    path = tmp_path / "t.yaml"
    path.write_text("a: 1\nb: 2\n")
    assert line_of(path, "b") == 2
    path.write_text("# a comment\na: 1\nb: 2\n")
    assert line_of(path, "b") == 3
    os.utime(path, ns=(1, 1))
    assert line_of(path, "b") == 3


def test_lines_of_nested_and_missing_fields_are_as_before(tmp_path: Path) -> None:
    """Honest: a nested path, a list item, a missing child (its parent's line), a missing
    top-level field (none), a file that does not parse (none)."""
    path = tmp_path / "t.yaml"
    path.write_text("a:\n  b:\n    - x\n    - c: 1\nd: 2\n")
    assert line_of(path, "a.b[1].c") == 4
    assert line_of(path, "a.b[0]") == 3
    assert line_of(path, "a.z") == 1
    assert line_of(path, "z") is None
    path.write_text("a: [1\n")
    assert line_of(path, "a") is None

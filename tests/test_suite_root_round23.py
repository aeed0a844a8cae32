"""A suite named by a path relative to the working folder grades the same from any folder:
``validate`` grades once in another folder (``grader_determinism``), and a shipped example
given as ``examples/bugfix`` (as the docs give it) was 0 of 7 valid, its hidden tests found
relative to the folder ``validate`` was started in."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundstate.spec.suite import load_suite
from groundstate.validation import validate_suite

REPO = Path(__file__).resolve().parent.parent


def test_a_suite_loaded_by_a_relative_path_has_an_absolute_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    suite = load_suite(Path("examples/retail"))
    assert suite.root.is_absolute() and suite.root == REPO / "examples" / "retail"


def test_hidden_tests_of_a_suite_named_relatively_agree_in_another_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REPO)
    validity = validate_suite(load_suite(Path("examples/bugfix")), tasks=["slug-accents"]).tasks[0]
    determinism = next(c for c in validity.checks if c.name == "grader_determinism")
    assert determinism.passed, determinism.detail
    assert "hidden-tests=pass" in determinism.detail
    assert validity.valid

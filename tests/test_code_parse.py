"""Parsing the suite's Python files survives CPython 3.11's threaded AST race (gh-106905)."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from groundstate.spec import code
from groundstate.spec.code import parse_python

SOURCE = "import json\nfrom helpers import rule\n"


def _failing(times: int, message: str) -> Any:
    real = ast.parse
    calls = {"n": 0}

    def parse(source: str, *args: Any, **kwargs: Any) -> ast.Module:
        calls["n"] += 1
        if calls["n"] <= times:
            raise SystemError(message)
        return real(source, *args, **kwargs)

    return parse


def test_a_spurious_recursion_depth_mismatch_is_parsed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mismatch = "AST constructor recursion depth mismatch (before=147, after=195)"
    monkeypatch.setattr(code.ast, "parse", _failing(2, mismatch))
    tree = parse_python(SOURCE)
    assert [type(node).__name__ for node in tree.body] == ["Import", "ImportFrom"]


def test_a_mismatch_that_persists_is_raised_after_a_few_tries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mismatch = "AST constructor recursion depth mismatch (before=1, after=2)"
    monkeypatch.setattr(code.ast, "parse", _failing(100, mismatch))
    with pytest.raises(SystemError, match="mismatch"):
        parse_python(SOURCE)


def test_any_other_system_error_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(code.ast, "parse", _failing(1, "something else broke"))
    with pytest.raises(SystemError, match="something else broke"):
        parse_python(SOURCE)

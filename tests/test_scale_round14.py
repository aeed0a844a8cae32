"""Scale and test-suite time, fourteenth round: what the cheaper paths must still find."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

import pytest

import groundstate.gateway
import groundstate.grading.terminal
from groundstate.bindings import HARNESS, Bindings
from groundstate.gateway import ToolGateway

# --- the rebinding check's fast path ------------------------------------------------------------


def _armed() -> Bindings:
    """The harness's bindings, checked twice clean: the second look takes the namespaces'
    versions as seen, so the next one may skip the names of namespaces not written since."""
    HARNESS.rebase()
    assert HARNESS.put_back() == [] and HARNESS.put_back() == []
    return HARNESS


def _fake(*args: object, **kwargs: object) -> str:
    return "success"


def _rebind_function() -> None:
    groundstate.grading.terminal.classify = _fake


def _rebind_method() -> None:
    ToolGateway.call = _fake  # type: ignore[method-assign,assignment]


def _shadow_builtin() -> None:
    vars(groundstate.gateway)["isinstance"] = _fake


def _rebind_json() -> None:
    json.dumps = _fake


def _replace_module() -> None:
    sys.modules["groundstate.gateway"] = type(sys)("groundstate.gateway")


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (_rebind_function, "groundstate.grading.terminal.classify"),
        (_rebind_method, "groundstate.gateway.ToolGateway.call"),
        (_shadow_builtin, "groundstate.gateway.isinstance"),
        (_rebind_json, "json.dumps"),
        (_replace_module, "sys.modules['groundstate.gateway']"),
    ],
)
def test_a_rebinding_after_clean_looks_is_still_found_and_put_back(
    tamper: Callable[[], None], named: str
) -> None:
    """Each namespace's version is read instead of its names once all were found unchanged;
    a write to one moves its version, so every kind of rebinding is still named and undone."""
    classify, call, dumps = groundstate.grading.terminal.classify, ToolGateway.call, json.dumps
    gateway = sys.modules["groundstate.gateway"]
    bindings = _armed()
    tamper()
    try:
        assert named in bindings.put_back()
        assert groundstate.grading.terminal.classify is classify
        assert ToolGateway.call is call
        assert json.dumps is dumps
        assert sys.modules["groundstate.gateway"] is gateway
        assert "isinstance" not in vars(gateway)
        assert bindings.put_back() == []
    finally:
        groundstate.grading.terminal.classify, json.dumps = classify, dumps
        ToolGateway.call = call  # type: ignore[method-assign]
        sys.modules["groundstate.gateway"] = gateway
        vars(gateway).pop("isinstance", None)
        HARNESS.rebase()


def test_a_lawful_write_to_a_watched_module_is_not_a_rebinding() -> None:
    """A module's own data changing (not its code) moves its version: the names are looked at
    again, found as first seen, and the new version taken as seen."""
    bindings = _armed()
    module = groundstate.grading.terminal
    before = module.__doc__
    try:
        module.__doc__ = "changed"
        assert bindings.put_back() == []
        assert bindings.put_back() == []
        groundstate.grading.terminal.classify = _fake
        assert bindings.put_back() == ["groundstate.grading.terminal.classify"]
    finally:
        module.__doc__ = before
        HARNESS.rebase()

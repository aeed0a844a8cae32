"""Overhead, twenty-seventh round: the rebinding check's looks read the functions' code and
defaults only when the audit hook noted a set since the last look.

Every look (three per attempt) read the code, defaults and keyword defaults of some 2,400
functions of the harness (a cache miss each: 0.05-0.06 ms a look), though nothing had set
any. Setting them raises an audit event (``object.__setattr__``, ``object.__delattr__``),
and so does a call of a C function through ``ctypes`` (``PyFunction_SetDefaults``): the
harness's hook now writes a dict of its own at each (``bindings._NOTED``), whose version the
look reads with the namespaces', and the words are read only when it moved. These tests hold
that every such change is still found, and found after a look that skipped the words."""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

import pytest

import groundstate.episode
from groundstate import bindings
from groundstate.bindings import _NOTED, HARNESS, Bindings, _Flat, _read
from groundstate.spec.suite import Suite

from .test_agents_round22 import _prohibited_and_put_back

CHECKS = "groundstate.episode.run_checks.__code__"


def _quiet(watch: Bindings) -> _Flat:
    """A watch whose last look found everything as first seen, and a look after it that
    took the quick way (its remembered versions kept as they were)."""
    watch.refresh()
    assert watch.rebound() == []
    assert watch.rebound() == []
    flat = watch._row()
    seen = flat.seen
    assert seen is not None
    assert watch.put_back(read_code=False) == [] and flat.seen is seen
    return flat


def _lie(*args: Any, **kwargs: Any) -> None:
    return None


def test_a_quiet_look_does_not_read_the_functions_words() -> None:
    """The usual case: nothing noted since the last look, the words are not read (on the
    old code every look read them: this fails there); a look asked to read them does (an
    attempt's last, which finds a set made through C)."""
    watch = Bindings()
    flat = _quiet(watch)

    class Unread(tuple):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            raise AssertionError("the functions' words were read")

    states = flat.states
    flat.states = Unread(())
    try:
        assert flat.unchanged(read_code=False)
        with pytest.raises(AssertionError, match="words were read"):
            flat.unchanged()
    finally:
        flat.states = states


def test_code_set_after_a_quiet_look_is_found_and_put_back() -> None:
    watch = Bindings()
    _quiet(watch)
    fn = groundstate.episode.run_checks
    code = fn.__code__
    try:
        fn.__code__ = _lie.__code__
        assert watch.put_back(read_code=False) == [CHECKS]
        assert fn.__code__ is code
        assert watch.rebound() == []
    finally:
        fn.__code__ = code


def _with_defaults() -> Any:
    return next(
        value
        for value in vars(groundstate.episode).values()
        if getattr(value, "__module__", None) == "groundstate.episode"
        and getattr(value, "__defaults__", None)
    )


def _with_kwdefaults() -> Any:
    for module in (groundstate.episode, bindings):
        for value in vars(module).values():
            if getattr(value, "__module__", None) == module.__name__ and getattr(
                value, "__kwdefaults__", None
            ):
                return value
    pytest.skip("no function of the harness with keyword defaults")


@pytest.mark.parametrize("how", ["set", "deleted", "kw_set", "kw_deleted"])
def test_defaults_changed_after_a_quiet_look_are_found(how: str) -> None:
    watch = Bindings()
    _quiet(watch)
    fn = _with_kwdefaults() if how.startswith("kw") else _with_defaults()
    name = "__kwdefaults__" if how.startswith("kw") else "__defaults__"
    first = getattr(fn, name)
    try:
        if how.endswith("deleted"):
            delattr(fn, name)
        elif name == "__defaults__":
            fn.__defaults__ = tuple(object() for _ in first)
        else:
            fn.__kwdefaults__ = {key: object() for key in first}
        found = watch.put_back(read_code=False)
        assert any(f"{fn.__name__}.__code__" in one for one in found), found
        assert getattr(fn, name) is first
    finally:
        setattr(fn, name, first)


def test_defaults_set_through_the_c_api_are_found_by_a_look_that_reads_the_code() -> None:
    """``PyFunction_SetDefaults`` (through ``ctypes``) sets them with no audit event: the
    look that reads every function's words (an attempt's last) finds them."""
    watch = Bindings()
    _quiet(watch)
    fn = _with_defaults()
    first = fn.__defaults__
    set_defaults = ctypes.pythonapi.PyFunction_SetDefaults
    set_defaults.argtypes = [ctypes.py_object, ctypes.py_object]
    try:
        assert set_defaults(fn, tuple(object() for _ in first)) == 0
        assert fn.__defaults__ is not first
        assert any(f"{fn.__name__}.__code__" in one for one in watch.put_back())
        assert fn.__defaults__ is first
    finally:
        fn.__defaults__ = first


@pytest.mark.parametrize("cover", ["cleared", "written", "seen_set"])
def test_a_set_covered_up_after_it_is_still_found(cover: str) -> None:
    """An agent that, after setting the code, clears or writes the notes (their version
    moves on all the same), or sets the watch's remembered versions to those of now (the
    seal takes them back: see ``Bindings.seal``)."""
    watch = HARNESS
    _quiet(watch)
    seal = watch.seal()
    fn = groundstate.episode.run_checks
    code = fn.__code__
    kept = dict(_NOTED)
    try:
        fn.__code__ = _lie.__code__
        flat = watch._row()
        if cover == "cleared":
            _NOTED.clear()
        elif cover == "written":
            _NOTED["set"] = kept.get("set")
        else:
            assert flat.looked is not None
            flat.seen = _read(flat.looked).tolist()
        found = watch.unsealed(seal) + watch.put_back(read_code=False)
        assert CHECKS in found, found
        assert fn.__code__ is code
    finally:
        fn.__code__ = code
        _NOTED.update(kept)
        watch.put_back()
    assert watch.rebound() == []


def test_the_notes_rebound_are_found() -> None:
    """``bindings._NOTED`` bound to a dict of the agent's (never written by the hook), and the
    watch's row dropped so that the next is built with it: the row's first look is a whole
    one, which names the global."""
    watch = Bindings()
    _quiet(watch)
    try:
        bindings._NOTED = {}
        watch._flat = None
        assert "groundstate.bindings._NOTED" in watch.put_back(read_code=False)
        assert bindings._NOTED is _NOTED
    finally:
        bindings._NOTED = _NOTED


def test_the_hook_notes_sets_and_holds_the_notes_in_its_defaults() -> None:
    (hook,) = bindings._AUDIT_HOOK
    assert hook.__defaults__[-1] is _NOTED
    before = _version(_NOTED)

    def plain() -> None:
        return None

    plain.__defaults__ = ()
    assert _version(_NOTED) > before


def _version(space: dict[str, object]) -> int:
    return ctypes.c_uint64.from_address(id(space) + object.__basicsize__ + 8).value


@pytest.mark.parametrize("part", ["code", "defaults"])
def test_an_agent_setting_a_function_of_the_harness_is_prohibited_after_quiet_attempts(
    bank: Suite, part: str
) -> None:
    """Whole attempts: after honest ones (their looks quiet), an agent that gives the
    harness's ``classify`` other code, or another function other defaults through the C API
    (no audit event: found by the attempt's last look), is ``prohibited_action`` and the
    function is put back."""
    from groundstate.testing import FunctionAgent, attempt

    from .test_inprocess_adversarial import _do_the_task

    async def honest(session: Any) -> str:
        return await _do_the_task(session)

    for _ in range(2):
        assert attempt(bank, "transfer", FunctionAgent(honest)).run.success

    def change() -> Callable[[], None]:
        if part == "code":
            fn = groundstate.episode.classify
            code = fn.__code__
            fn.__code__ = (lambda interruption, assertions, constraints: "success").__code__
            return lambda: setattr(fn, "__code__", code)
        fn = _with_defaults()
        first = fn.__defaults__
        set_defaults = ctypes.pythonapi.PyFunction_SetDefaults
        set_defaults.argtypes = [ctypes.py_object, ctypes.py_object]
        set_defaults(fn, tuple(object() for _ in first))
        return lambda: setattr(fn, "__defaults__", first)

    says = ".classify.__code__" if part == "code" else f".{_with_defaults().__name__}.__code__"
    _prohibited_and_put_back(bank, change, says)

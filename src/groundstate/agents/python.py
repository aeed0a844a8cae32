"""Python agents: wrap a coroutine function, or load one from a system file's entry."""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from groundstate import untrusted
from groundstate.agents.base import Agent, Session
from groundstate.errors import SpecError, exception_text, one_line
from groundstate.interrupts import Interrupted, from_ctrl_c
from groundstate.paths import os_reason
from groundstate.spec.canonical import hash_file
from groundstate.spec.strict import did_you_mean, value_problem
from groundstate.spec.system import SystemSpec, resolve_entry
from groundstate.tools import changed_since_loaded, load_module


class FunctionAgent:
    """An agent from a coroutine function ``async def agent(session) -> str | None``."""

    def __init__(self, fn: Callable[[Session], Awaitable[str | None]]) -> None:
        self.fn = fn

    async def run(self, session: Session) -> str | None:
        return await self.fn(session)


def load_agent(system: SystemSpec) -> Agent:
    """Build the agent named by ``harness.orchestration_loop``.

    The entry is either a coroutine function ``async def agent(session, **params)``, or a
    factory called with the params that returns an object with ``async run(session)``. A
    factory with a ``from_system`` class method (the built-in model adapters, named by their
    short names ``openai-chat`` and ``anthropic-messages``) is given the whole system spec:
    ``factory.from_system(system, **params)``, so what is hashed is what is called.

    The entry is resolved once per system spec (a batch builds an agent per attempt from the
    same spec: resolving the file, hashing it and checking the parameters cost about 0.35 ms
    each time); a factory is still called for every agent, so no agent's state reaches the
    next.

    Outside an attempt (the batch's preflight, ``check``, ``play``) a factory that raises,
    ``SystemExit`` included, is refused as :class:`SpecError` naming the entry and the line of
    its file that raised (an attempt builds its agent with :func:`agent_builder`: there the
    raise is the attempt's crash).
    """
    build = agent_builder(system)
    try:
        return build()
    except SpecError:
        raise
    except BaseException as exc:  # the system's code: exit() must not end the command quietly
        if isinstance(exc, Interrupted) or (isinstance(exc, KeyboardInterrupt) and from_ctrl_c()):
            raise  # the user's Ctrl-C
        raise _factory_error(system, exc) from exc


def _factory_error(system: SystemSpec, exc: BaseException) -> SpecError:
    """*exc*, raised by *system*'s agent factory, as one line: the entry, what it raised and
    the line of the entry's file it raised at (when the entry is a file)."""
    loop = system.harness.orchestration_loop
    code_file = resolve_entry(loop.entry, system.base_dir)[0]
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(exc.__traceback__)
        if code_file is not None and _same_file(frame.filename, code_file)
    ]
    said = one_line(exception_text(exc))
    reason = f"building the agent failed: {type(exc).__name__}{': ' + said if said else ''}"
    where = f" (at line {lines[-1]} of {code_file.name})" if code_file and lines else ""
    return SpecError(system.source, "harness.orchestration_loop", reason + where)


def _same_file(name: str, path: Path) -> bool:
    try:
        return Path(name).resolve() == path.resolve()
    except (OSError, ValueError):
        return False


def agent_builder(system: SystemSpec) -> Callable[[], Agent]:
    """How to build *system*'s agent (see :func:`load_agent`): the entry resolved, its module
    imported and checked, once per spec; calling it calls the factory."""
    known = _BUILDERS.get(id(system))
    if known is not None and known[0] is system:
        return known[1]
    build = _builder(system)
    if len(_BUILDERS) >= 256:  # systems loaded again and again: forget the old ones
        _BUILDERS.clear()
    _BUILDERS[id(system)] = (system, build)
    return build


def harness_entry(system: SystemSpec) -> bool:
    """Whether *system*'s agent entry names one of the harness's own agents
    (:func:`~groundstate.untrusted.trusted_entry`): building and running it runs none of the
    system's code. Read from the entry alone, before anything is imported."""
    try:
        code_file, module_name, name = resolve_entry(
            system.harness.orchestration_loop.entry, system.base_dir
        )
    except ValueError:
        return False
    return untrusted.trusted_entry(module_name, name, code_file)


_BUILDERS: dict[int, tuple[SystemSpec, Callable[[], Agent]]] = {}
"""How to build each system spec's agent (by the spec's identity: the spec is frozen, and the
entry's file was hashed into it when it was loaded)."""


def _builder(system: SystemSpec) -> Callable[[], Agent]:
    """How to build *system*'s agent: the entry resolved and checked; raises what is wrong.
    Audit hooks are refused from here on (see :func:`~groundstate.bindings.refuse_audit_hooks`):
    an agent's file imported while they were let in added one that saw every connection the
    harness opened, the checks' own, in every attempt. Not for the harness's own agents
    (``mcp-command``, the scripted replay): their import runs none of the system's code, and
    the process is then watched as holding none (see :mod:`groundstate.untrusted`)."""
    loop = system.harness.orchestration_loop
    field = "harness.orchestration_loop.entry"
    code_file, module_name, name = resolve_entry(loop.entry, system.base_dir)
    untrusted.noted(untrusted.trusted_entry(module_name, name, code_file))
    if code_file is None:
        module: Any = _import(module_name, system)
        _refuse_changed_module(module, system)
    else:  # the code the system's hash names (a pool worker imports it after the parent)
        try:
            module = load_module(code_file, "agent", expect=_hashed_code(system))
        except SpecError as exc:  # named as the system file names its folder, not in full
            raise exc.rerooted(system.base_dir.resolve(), system.base_dir) from exc.__cause__
    factory = getattr(module, name, None)
    if not callable(factory):
        defined = [key for key, value in vars(module).items() if callable(value)]
        hint = did_you_mean(name, defined)
        raise SpecError(system.source, field, f"{loop.entry!r} names no callable{hint}")
    if inspect.iscoroutinefunction(factory):
        _check_params(factory, loop.params, system)
        run = functools.partial(factory, **loop.params)
        return lambda: FunctionAgent(run)
    if _takes_session(factory):
        raise SpecError(
            code_file or module_name,
            name,
            f"is a plain 'def'; an agent entry is 'async def {name}(session, ...)' (or a "
            "factory returning an object with 'async def run(self, session)')",
            line=_def_line(factory),
        )
    build = getattr(factory, "from_system", None)
    _check_params(
        build if callable(build) else factory, loop.params, system, skip=int(callable(build))
    )
    return functools.partial(_built, system, factory)


def _refuse_changed_module(module: Any, system: SystemSpec) -> None:
    """Refuse (:class:`SpecError`, naming the file) a module entry's module whose file no
    longer hashes as when *system* was loaded: a pool or Ray worker imports it afresh, and
    ran a module edited (or another copy of it installed) since under the batch's hash.
    Checked once per process and file: the module imported then is the one that runs."""
    expect, origin = _hashed_code(system), getattr(module, "__file__", None)
    if expect in (None, "unknown") or origin is None or (origin, expect) in _SAME_CODE:
        return
    try:
        digest = hash_file(Path(origin))
    except OSError as exc:
        raise SpecError(origin, None, f"cannot read: {os_reason(Path(origin), exc)}") from None
    if digest != expect:
        raise SpecError(origin, None, changed_since_loaded(digest, expect))
    _SAME_CODE.add((origin, expect))


_SAME_CODE: set[tuple[str, str | None]] = set()
"""(module file, hash) pairs checked in this process (see :func:`_refuse_changed_module`)."""


def _hashed_code(system: SystemSpec) -> str | None:
    """The agent file's hash as :func:`~groundstate.spec.system.load_system` recorded it
    (None for a spec built in code, which hashed no file)."""
    code = system.resolved.get("code")
    found = code.get("orchestration_loop") if isinstance(code, dict) else None
    return found if isinstance(found, str) else None


def _built(system: SystemSpec, factory: Callable[..., Any]) -> Agent:
    """A new agent from *factory* (see :func:`load_agent`)."""
    loop = system.harness.orchestration_loop
    build = getattr(factory, "from_system", None)
    try:
        agent = build(system, **loop.params) if callable(build) else factory(**loop.params)
    except TypeError as exc:
        raise SpecError(system.source, "harness.orchestration_loop.params", str(exc)) from None
    if not callable(getattr(agent, "run", None)):
        field = "harness.orchestration_loop.entry"
        raise SpecError(system.source, field, f"{loop.entry!r} returned an object without run()")
    return agent  # type: ignore[no-any-return]


def _takes_session(factory: Callable[..., Any]) -> bool:
    """A plain function whose first parameter is ``session``: an agent written without async."""
    if not inspect.isfunction(factory):
        return False
    params = list(inspect.signature(factory).parameters)
    return bool(params) and params[0] == "session"


def _def_line(fn: Callable[..., Any]) -> int | None:
    try:
        return inspect.getsourcelines(fn)[1]
    except (OSError, TypeError):
        return None


def _check_params(
    fn: Callable[..., Any], params: dict[str, Any], system: SystemSpec, skip: int = 1
) -> None:
    """Refuse parameters the agent function (or factory) does not take, naming the one meant,
    or of a type its annotations refuse, before any attempt runs (every attempt would fail
    for it, counted as the agent's failure); *skip*: the leading arguments it is given first
    (a session, the system)."""
    signature = _signature(fn)
    if signature is None:  # no signature to read: the call itself will say
        return
    field = "harness.orchestration_loop.params"
    try:
        signature.bind(*[None] * skip, **params)
    except TypeError as exc:
        taken = list(signature.parameters)[skip:]
        hints = "".join(did_you_mean(key, taken) for key in params if key not in taken)
        raise SpecError(system.source, field, f"{exc}{hints}") from None
    extra = [p for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]
    for name, value in params.items():
        parameter = signature.parameters.get(name) or extra[0]
        if value is None and parameter.default is None:  # `x: int = None`: None is meant
            continue
        problem = value_problem(parameter.annotation, value)
        if problem is not None:
            raise SpecError(system.source, f"{field}.{name}", problem)


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    """*fn*'s signature, each annotation evaluated where it can be (one naming a type imported
    only for type checkers stays text, and is not checked; the others still are)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    names = dict(vars(module)) if module is not None else {}
    return signature.replace(
        parameters=[
            p.replace(annotation=_evaluated(p.annotation, names))
            for p in signature.parameters.values()
        ]
    )


def _evaluated(annotation: Any, names: dict[str, Any]) -> Any:
    if not isinstance(annotation, str):
        return annotation
    try:
        # the agent's own module, imported already: its annotations are its code
        return eval(annotation, names)
    except Exception:  # a name only a type checker sees: left as text
        return annotation


def _import(module_name: str, system: SystemSpec) -> Any:
    try:
        return importlib.import_module(module_name)
    except Exception as exc:  # the user's package may raise anything while it is imported
        reason = f"cannot import {module_name}: {type(exc).__name__}: {exc}"
        raise SpecError(system.source, "harness.orchestration_loop.entry", reason) from None

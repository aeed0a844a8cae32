"""Whether untrusted Python code shares this interpreter: the one place the attempt's
watches against in-process tampering ask.

The harness watches what an in-process agent could do to it from inside the interpreter:
its code rebound (:mod:`groundstate.bindings`), the system's and the task's fields changed
in memory (``episode._resystemed``, ``episode._regraded``). Those watches find nothing when
no code but the harness's and the suite's runs in the process: the suite's own oracle
replay (:class:`~groundstate.agents.scripted.ScriptedAgent`, which only calls the session
with a solution's or a trace's steps), an ``mcp-command`` agent (its program is another
process that reaches the harness only through MCP), with the simulated user a kind of the
harness's own. Any other agent (a coroutine function, a factory's object, a model adapter,
which may be a class of the system's own) or a user object made by the caller is
untrusted: it is watched, and so is every later attempt in the process, since its code
(a thread it left running, a module it imported) may still be there.

That "may still be there" is held where no Python code can set it back: the harness's
audit hook's own refusal of hooks (:func:`~groundstate.bindings.refuse_audit_hooks`), set
as the first untrusted agent's file is imported or its attempt starts, and refused any
change from then on; and it is asked of the hook as the interpreter calls it, through no
name code could rebind (see :func:`~groundstate.bindings.audit_hooks_refused`). The watches
that do not guard against in-process code (writes behind the gateway, the calls counted
outside the session, the record against the account) run on every attempt.
"""

from __future__ import annotations

import sys
from typing import Any

from groundstate.bindings import refuse_audit_hooks

AGENT_CLASSES = frozenset(
    {
        ("groundstate.agents.scripted", "ScriptedAgent"),
        ("groundstate.agents.mcp_command", "McpCommandAgent"),
    }
)
"""The agents whose code in this process is the harness's (by module and class name)."""

USER_CLASSES = frozenset(
    {
        ("groundstate.users", "ScriptedUser"),
        ("groundstate.users", "RecordedUser"),
        ("groundstate.users", "ModelUser"),
        ("groundstate.play", "PersonUser"),
    }
)
"""The simulated users whose code is the harness's (a model's replies are text)."""


def _is_one_of(value: Any, classes: frozenset[tuple[str, str]]) -> bool:
    """Whether *value*'s exact class is one of *classes*, by identity with the class its
    module holds (a class of the agent's own that names itself so is not: a subclass, or
    one that sets ``__module__`` and ``__qualname__``, overrides ``run``), and holding no
    code of its own (see :func:`_own_methods`)."""
    kind = type(value)
    for module_name, name in classes:
        module = sys.modules.get(module_name)
        if module is not None and kind is getattr(module, name, None):
            return _own_methods(value)
    return False


def _own_methods(value: Any) -> bool:
    """Whether *value* holds no code of its own in its attributes: no function, method or
    other callable set on the object (a ``run`` or ``reply`` there is called in place of
    its class's)."""
    held = getattr(value, "__dict__", None)
    return isinstance(held, dict) and not any(map(callable, held.values()))


def trusted_entry(module_name: str, name: str, code_file: object) -> bool:
    """Whether a system's agent entry names one of the harness's own agents (no file of the
    system's, no module but groundstate's): importing it runs none of the system's code."""
    return code_file is None and (module_name, name) in AGENT_CLASSES


def noted(entry_trusted: bool) -> None:
    """Mark the process as holding untrusted code, unless *entry_trusted*: called before an
    agent's file is imported (its module's own code runs as it is imported)."""
    if not entry_trusted:
        refuse_audit_hooks()


def shares_interpreter(agent: Any, user: Any = None) -> bool:
    """Whether untrusted Python code may run in this interpreter during an attempt of
    *agent* with *user* (None: the user the system declares, always a harness kind): the
    agent or the user is not one of the harness's own, or untrusted code ran in the process
    before (then it marks the process, for good)."""
    if not _is_one_of(agent, AGENT_CLASSES) or (
        user is not None and not _is_one_of(user, USER_CLASSES)
    ):
        refuse_audit_hooks()
        return True
    # The mark asked of the hook here, as audit_hooks_refused asks it, not through that name
    # nor any other: one that code left running rebound (``bindings.audit_hooks_refused``,
    # ``bindings._AUDIT_HOOK``, what ``_is_one_of`` reads) no longer turns the watches off
    # for a later replay. (The names by which the episode reaches this function, and the
    # runner the episode, are the harness's entry; rebound, they are beyond any watch.)

    def probe() -> None: ...

    try:
        probe.__defaults__ = (probe,)
    except:  # noqa: E722 (bare: see audit_hooks_refused)
        return True
    return False

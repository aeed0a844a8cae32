"""A person in the loop: solve a task through the same tools, or play the user.

``groundstate play SUITE TASK --as agent`` lets a person act as the agent in the terminal: the
same session, gateway, permissions, limits and grading as any agent. A successful trajectory
can be saved as an ``alternative`` solution of the task (the reference chapter's "have a
competent human complete it"). ``--as user`` lets a person play the simulated user against a
system (``user_simulator.kind: person``). Either attempt is stored like any other, as a batch of
one attempt.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sys
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from groundstate.agents.base import Agent, Session
from groundstate.episode import AttemptInfo, run_attempt
from groundstate.errors import SpecError
from groundstate.paths import make_folder
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, derive_seed, plan_batch
from groundstate.spec.files import YamlDumper
from groundstate.spec.solution import Solution, Step
from groundstate.spec.suite import Suite
from groundstate.spec.system import AgentEntry, HarnessSection, SystemSpec, UserSimulatorSection
from groundstate.store import RunStore
from groundstate.users import TurnLimit

HELP = """\
Commands:
  tools                      list the tools and their parameters
  call TOOL {"arg": value}   call a tool (arguments as a JSON object; may be omitted)
  say TEXT                   send a message to the user and read the reply
  finish TEXT                end with a final reply to the user
  give up REASON             end without completing the task
  help                       this list"""


@dataclass
class Terminal:
    """The person's terminal: the streams in place when it is made. While an attempt runs,
    ``sys.stdout`` keeps what the code under evaluation prints; the person must still see."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    inp: TextIO = field(default_factory=lambda: sys.stdin)

    def show(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def ask(self, prompt: str) -> str:
        """One line typed by the person; ``EOFError`` when the input has ended."""
        self.out.write(prompt)
        self.out.flush()
        line = self.inp.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")


@dataclass
class PersonAgent:
    """The agent side played by a person; the steps taken are kept for a solution file."""

    terminal: Terminal = field(default_factory=Terminal)
    steps: list[Step] = field(default_factory=list)

    async def run(self, session: Session) -> str | None:
        show = self.terminal.show
        show(f"Instructions:\n{session.instructions}\n")
        show(f"The user says: {session.user_request}\n")
        show(HELP)
        while True:
            try:
                line = self.terminal.ask("agent> ").strip()
            except EOFError:
                session.give_up("the person left the terminal")
            command, _, rest = line.partition(" ")
            if command == "finish":
                self.steps.append(Step(finish=rest))
                return rest
            if command == "give" and rest.startswith("up"):
                session.give_up(rest[2:].strip() or "the person gave up")
            await self._act(session, command, rest.strip())

    async def _act(self, session: Session, command: str, rest: str) -> None:
        show = self.terminal.show
        if command == "tools":
            for tool in session.tools:
                params = ", ".join(tool.parameters.get("properties", {}))
                show(f"  {tool.name}({params}): {tool.description}")
        elif command == "say" and rest:
            self.steps.append(Step(say=rest))
            reply = await session.say(rest)
            show(f"user: {reply}" if reply is not None else "(the user has left)")
        elif command == "call" and rest:
            name, _, raw = rest.partition(" ")
            args = _arguments(raw)
            if args is None:
                show('arguments must be a JSON object, e.g. {"order_id": "O-1"}')
                return
            self.steps.append(Step(call=name, args=args))
            result = await session.call(name, args)
            shown = json.dumps(result.output, indent=1) if result.ok else result.error
            show(("ok: " if result.ok else f"{result.error_class}: ") + str(shown))
        else:
            show(HELP)


def _arguments(raw: str) -> dict[str, Any] | None:
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return None
    return args if isinstance(args, dict) else None


class PersonUser(TurnLimit):
    """The simulated user played by a person: each agent message is shown, the reply typed.
    An empty reply or ``/bye`` leaves the conversation."""

    waits = True

    def __init__(self, spec: UserSimulatorSection, terminal: Terminal | None = None) -> None:
        super().__init__(spec)
        self._terminal = terminal or _PERSON_TERMINAL.get() or Terminal()

    def reply(self, message: str) -> str | None:
        if self._gone():
            return None
        self._terminal.show(f"agent: {message}")
        try:
            text = self._terminal.ask("you> ").strip()
        except EOFError:
            text = ""
        if text in ("", "/bye"):
            self.left = True
            return None
        return text


_PERSON_TERMINAL: ContextVar[Terminal | None] = ContextVar("person_terminal", default=None)
"""The terminal a ``kind: person`` user talks through in the attempt :func:`play_attempt`
runs (the attempt's threads inherit the context)."""


def person_system(name: str = "person") -> SystemSpec:
    """The system under which a person plays the agent (recorded as such)."""
    loop = AgentEntry(entry="groundstate.play:PersonAgent")
    return SystemSpec(name=name, harness=HarnessSection(orchestration_loop=loop))


def with_person_user(system: SystemSpec) -> SystemSpec:
    """*system* with a person as its simulated user (its hash changes: a different instrument)."""
    user = system.user_simulator.model_copy(update={"kind": "person"})
    played = system.model_copy(update={"user_simulator": user})
    played._base_dir = system.base_dir
    return played


SOLUTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
"""A name ``--save`` may give: a file of the task's solutions folder, not a path."""


def solution_path(suite_root: Path, task_id: str, name: str) -> Path:
    """Where ``--save NAME`` writes; a name that is a path, or taken, is refused (checked
    before the person plays, so that no played attempt is lost to a bad name)."""
    if not SOLUTION_NAME.fullmatch(name):
        reason = f"{name!r} is not a solution name: letters, digits, '_', '.' and '-'"
        raise SpecError("play", "--save", reason)
    path = suite_root / "solutions" / task_id / f"{name}.yaml"
    if path.exists():
        raise SpecError(path, None, "a solution of that name exists; choose another --save name")
    return path


def save_solution(suite_root: Path, task_id: str, name: str, steps: list[Step]) -> Path:
    """Write *steps* as an ``alternative`` solution of the task; refuse to overwrite."""
    path = solution_path(suite_root, task_id, name)
    solution = Solution(
        kind="alternative", description="Played by a person (groundstate play).", steps=steps
    )
    make_folder(path.parent)
    data = solution.model_dump(mode="json", exclude_defaults=True)
    data["steps"] = [s.model_dump(mode="json", exclude_defaults=True) for s in steps]
    path.write_text(
        yaml.dump(data, Dumper=YamlDumper, sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    return path


def require_task(suite: Suite, task_id: str) -> None:
    """Refuse a *task_id* the suite lacks, naming those it has (before a store is opened)."""
    if task_id not in suite.tasks:
        known = ", ".join(sorted(suite.tasks))
        raise SpecError(suite.shown(), "task", f"no task {task_id!r} (the suite has: {known})")


def play_attempt(
    suite: Suite,
    task_id: str,
    system: SystemSpec,
    agent: Agent,
    store: RunStore,
    seed: int = 0,
    terminal: Terminal | None = None,
) -> AgentRun:
    """Run one attempt of *task_id* with a person in it and store it as a batch of one; a
    ``kind: person`` user talks through *terminal* (default: the streams in place now).

    Not through the batch runner: its preflight and canary would ask the person to play
    twice more. The batch names only this task, so its report counts one attempt of one task.
    """
    require_task(suite, task_id)
    one = dataclasses.replace(
        suite,
        tasks={task_id: suite.tasks[task_id]},
        solutions={task_id: suite.solutions.get(task_id, {})},
    )
    batch = plan_batch(one, system, BatchConfig(attempts=1, seed=seed))
    store.add_batch(batch)
    info = AttemptInfo(
        run_id=uuid.uuid4().hex,
        batch_id=batch.batch_id,
        attempt=1,
        seed=derive_seed(seed, task_id, 1),
    )
    token = _PERSON_TERMINAL.set(terminal or Terminal())
    try:
        output = asyncio.run(run_attempt(one.tasks[task_id], one, system, agent, info))
    finally:
        _PERSON_TERMINAL.reset(token)
    return store.add_run(output.run, output.artifacts)

"""``groundstate play``: a person solves a task as the agent, or plays the user."""

from __future__ import annotations

from pathlib import Path

import click

from groundstate.cli import STORE_OPTION, main


@main.command()
@click.argument("suite", type=click.Path(path_type=Path))
@click.argument("task_id")
@click.option(
    "--as",
    "role",
    type=click.Choice(["agent", "user"]),
    default="agent",
    show_default=True,
    help="Play the agent (through the task's tools) or the simulated user.",
)
@click.option("--system", type=click.Path(path_type=Path), help="The system (for --as user).")
@click.option("--save", metavar="NAME", help="Save a successful trajectory as solution NAME.")
@click.option("--seed", type=int, default=0, show_default=True, help="The attempt's seed.")
@STORE_OPTION
def play(
    suite: Path,
    task_id: str,
    role: str,
    system: Path | None,
    save: str | None,
    seed: int,
    store: Path,
) -> None:
    """Play TASK_ID of SUITE in the terminal; the attempt is graded and stored."""
    from groundstate.agents.base import Agent
    from groundstate.agents.python import load_agent
    from groundstate.errors import SpecError
    from groundstate.play import (
        PersonAgent,
        Terminal,
        person_system,
        play_attempt,
        require_task,
        save_solution,
        solution_path,
        with_person_user,
    )
    from groundstate.spec.suite import load_suite
    from groundstate.spec.system import load_system
    from groundstate.store import RunStore

    loaded = load_suite(suite)
    require_task(loaded, task_id)  # before the store is made
    if role == "agent" and save:
        solution_path(loaded.root, task_id, save)  # a bad name is refused before anyone plays
    terminal = Terminal()  # this command's streams, before the attempt captures output
    person = PersonAgent(terminal)
    agent: Agent
    if role == "agent":
        spec, agent = person_system(), person
    else:
        if system is None:
            raise SpecError("play", "--system", "--as user needs the system to play against")
        spec = with_person_user(load_system(system))
        agent = load_agent(spec)
    with RunStore(store) as run_store:
        run = play_attempt(loaded, task_id, spec, agent, run_store, seed, terminal)
    verdict = "success" if run.success else run.terminal_reason
    click.echo(f"\n{verdict} · run {run.run_id[:12]} · batch {run.batch_id} · stored in {store}")
    if role == "agent" and save:
        if not run.success:
            click.echo(f"not saved as a solution: the attempt ended as {run.terminal_reason}")
            return
        path = save_solution(loaded.root, task_id, save, person.steps)
        shown = loaded.shown(path)
        click.echo(f"saved as {shown} (kind: alternative; `groundstate validate` checks it)")

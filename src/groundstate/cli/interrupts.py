"""SIGINT and SIGTERM during ``run``: stop cleanly, name the batch and how to resume it.

The first signal sets the runner's :class:`InterruptFlag`. While the batch's event loop runs
(preflight, the canary, attempts), it cancels the batch's task, which leaves ``asyncio.run``
as :class:`Interrupted`; before that (loading, validation) the handler raises
:class:`Interrupted` where the main thread is. The runner also checks the flag before storing
each try, so code that swallowed the cancellation cannot store a try the signal cut short.
A second signal stops the process at once (after removing its temporary folder). Every stored
record stays whole either way: each is one transaction.
"""

from __future__ import annotations

import logging
import shlex
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

import click

from groundstate.errors import GroundstateError
from groundstate.interrupts import SHUT_OUT, Interrupted, InterruptFlag
from groundstate.leftovers import harness_exit
from groundstate.rounding import counted
from groundstate.workdirs import remove_own

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interruptible(flag: InterruptFlag) -> Iterator[None]:
    """Turn SIGINT and SIGTERM into :class:`Interrupted` inside the block, and ignore the
    signals an in-process agent could end the process with (:data:`SHUT_OUT`: a
    ``signal.alarm(1)`` killed ``run``, every attempt in flight with it, where the pool's
    workers ignore it and the batch goes on)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        if flag.signum is not None:  # the second signal: no more unwinding
            remove_own()
            harness_exit(128 + signum)  # not laid at an in-process agent's door
        flag.signum = signum
        # attempts abandoned mid-call are expected now, not worth asyncio's error reports
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        if not flag.cancel():  # no batch loop runs: unwind from wherever we are
            raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    previous |= {s: signal.signal(s, signal.SIG_IGN) for s in SHUT_OUT}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def report_interrupted(
    exc: Interrupted,
    batch_id: str | None,
    store: Path,
    resume_args: list[str],
) -> None:
    """Tell the user what was stored and the exact command that completes the batch."""
    name = signal.Signals(exc.signum).name
    if batch_id is None:
        click.echo(f"interrupted by {name} before the batch started: nothing was stored", err=True)
        return
    done = _stored_attempts(store, batch_id)
    click.echo(
        f"interrupted by {name}: batch {batch_id} stopped with {done} stored; "
        "every stored record is whole",
        err=True,
    )
    echo_resume(batch_id, store, resume_args)


def echo_resume(batch_id: str, store: Path, resume_args: list[str]) -> None:
    """The exact command that completes *batch_id* (on stderr)."""
    command = ["groundstate", "run", *resume_args, "--resume", batch_id, "--store", str(store)]
    click.echo(f"resume with: {shlex.join(command)}", err=True)


def _stored_attempts(store: Path, batch_id: str) -> str:
    from groundstate.analysis import planned, reruns_pending
    from groundstate.store import RunStore

    try:
        with RunStore(store, create=False) as run_store:  # read: never made here
            batch = run_store.batch(batch_id)
            final = planned(batch, run_store.runs(batch_id))[0].final()
    except GroundstateError:
        return "an unknown number of attempts"
    stored = f"{len(final)} of {counted(batch.attempts * len(batch.task_revisions), 'attempt')}"
    pending = reruns_pending(batch, final)
    return stored + (f" ({pending} invalid with reruns due)" if pending else "")

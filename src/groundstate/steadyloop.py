"""The batch's event loop, held against in-process code that stops it: ``asyncio.run`` for a
batch, but a loop stopped (``loop.stop()``, handed over with ``call_soon_threadsafe`` by an
agent that found the loop through ``sys._current_frames()``), or a callback raising
``SystemExit`` or ``KeyboardInterrupt`` (no Ctrl-C pressed), is run again where it left off,
and the tries in flight are told (:func:`groundstate.exitcause.loop_disrupted`: their agent's
prohibited action). An attempt's loop is held only while an in-process batch has tries in
flight to lay it at: in a pool worker (whose parent records the attempt's end), under
``testing.attempt`` or with only checks running, the error is raised as ``asyncio.run``
raises it, so a disruption of an attempt is never silently absorbed; the batch's own loop
(:func:`run`) is always held. Before, the batch stopped there: ``SystemExit(0)`` ended ``run`` with
status 0 and its attempts unstored, the others with a traceback, and the resume drew the
agent's attempt anew.

Stopping a loop leaves it whole (``run_forever`` returns at the end of an iteration), and a
callback's exception leaves the callbacks after it queued: running the loop again loses
nothing. A cancelled task cannot be run on: an attempt's is its agent's crash
(:mod:`groundstate.executors.local`), the batch's ends it (:data:`OWNED`). Not held: the
harness's callbacks dropped from the loop's queue, the loop's selector closed
(docs/reliability.md, *What is not guaranteed*)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from groundstate.exitcause import loop_disrupted
from groundstate.interrupts import from_ctrl_c

T = TypeVar("T")

OWNED: ContextVar[bool] = ContextVar("groundstate_owned_loop", default=False)
"""Whether the batch whose code runs here runs on a loop :func:`run` made, whose main task
nobody but the harness holds: a cancellation no interruption asked for is then in-process
code's (a library caller awaiting ``BatchRunner.start`` may cancel it itself)."""

STOPPED = "Event loop stopped before Future completed."
"""What ``run_until_complete`` raises when the loop was stopped under it."""


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run *main* to its end on a new event loop, as ``asyncio.run`` does (the loop closed
    after it, its tasks cancelled, its async generators and default executor shut down),
    holding the loop against the stops described above."""
    context = contextvars.copy_context()
    context.run(OWNED.set, True)
    with asyncio.Runner() as runner:
        return run_on(runner.get_loop(), main, context, always=True)


def run_on(
    loop: asyncio.AbstractEventLoop,
    main: Coroutine[Any, Any, T],
    context: contextvars.Context,
    *,
    always: bool = False,
) -> T:
    """Run *main* to its end on *loop* in *context* (``asyncio.Runner.run`` off the main
    thread, as :mod:`groundstate.loopthreads` runs attempts), holding the loop while there
    is a try to lay a disruption at, or *always* (the batch's own loop, :func:`run`: a stop
    an agent made as it ran may take effect only once its try is being graded)."""
    task = loop.create_task(main, context=context)
    while True:
        try:
            return loop.run_until_complete(task)
        except BaseException as error:
            what = disruption(error, task)
            if what is None or not (loop_disrupted(what) or always):
                raise  # none to hold it against: it ends the work as under asyncio.run


def disruption(error: BaseException, task: asyncio.Future[Any]) -> str | None:
    """What code in the process did to the loop, if *error* (out of ``run_until_complete``
    of *task*) is such a disruption: never the task's own end, nor the user's Ctrl-C."""
    if task.done():
        return None
    if isinstance(error, RuntimeError) and str(error) == STOPPED:
        return "stopped the batch's event loop (loop.stop())"
    if isinstance(error, SystemExit):
        return f"raised SystemExit({error.code!r}) in the batch's event loop"
    if isinstance(error, KeyboardInterrupt) and not from_ctrl_c():
        return "raised KeyboardInterrupt in the batch's event loop (no Ctrl-C pressed)"
    return None

"""The batch's event loop, held against in-process code that stops it: ``asyncio.run`` for a
batch, but a loop stopped (``loop.stop()``, handed over with ``call_soon_threadsafe`` by an
agent that found the loop through ``sys._current_frames()``), or a callback raising
``SystemExit`` or ``KeyboardInterrupt`` (no Ctrl-C pressed), is run again where it left off,
and the try whose code did it is told (:func:`groundstate.exitcause.loop_disrupted`: its
agent's prohibited action). An attempt's loop is held only while an in-process batch has
tries in flight: in a pool worker (whose parent records the attempt's end), under
``testing.attempt`` or with only checks running, the error is raised as ``asyncio.run``
raises it, so a disruption of an attempt is never silently absorbed; the batch's own loop
(:func:`run`) is always held. Before, the batch stopped there: ``SystemExit(0)`` ended ``run`` with
status 0 and its attempts unstored, the others with a traceback, and the resume drew the
agent's attempt anew.

Whose code it was is read as the call is made (:class:`HeldLoop`), never as it takes effect:
a stop or a cancellation handed over by one try's agent takes effect when the loop next
looks, by which time that try may have ended and an honest one taken its place (the
forty-third round laid it at the tries in flight then: under load, an honest try was
stored as the crash). A call nobody can be told for (made through ``asyncio``'s base
classes, or a loop's private attributes) is held all the same but laid at no try.

Stopping a loop leaves it whole (``run_forever`` returns at the end of an iteration), and a
callback's exception leaves the callbacks after it queued: running the loop again loses
nothing. A cancelled task cannot be run on: an attempt's is its agent's crash
(:mod:`groundstate.executors.local`), the batch's ends it (:data:`OWNED`). Not held: the
harness's callbacks dropped from the loop's queue, the loop's selector closed
(docs/reliability.md, *What is not guaranteed*)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import Any, TypeVar

from groundstate.exitcause import agents_acting, loop_disrupted
from groundstate.interrupts import from_ctrl_c

T = TypeVar("T")

OWNED: ContextVar[bool] = ContextVar("groundstate_owned_loop", default=False)
"""Whether the batch whose code runs here runs on a loop :func:`run` made, whose main task
nobody but the harness holds: a cancellation no interruption asked for is then in-process
code's (a library caller awaiting ``BatchRunner.start`` may cancel it itself)."""

STOPPED = "Event loop stopped before Future completed."
"""What ``run_until_complete`` raises when the loop was stopped under it."""


class HeldLoop(asyncio.SelectorEventLoop):
    """``asyncio``'s loop, noting whose code stops it, raises out of it or cancels its tasks,
    as the call is made: a callback handed over from another thread is run as the code of
    the tries its caller is laid at (:func:`~groundstate.exitcause.agents_acting`, told by
    the thread and the work the harness gave it, which an agent cannot forge); ``stop`` or
    ``Task.cancel`` called from another thread, as that thread's. The harness's own calls,
    made in the loop's thread, are no one's."""

    def __init__(self) -> None:
        super().__init__()
        self.set_task_factory(_task)
        self._acting: list[str] | None = None
        self._own = threading.get_ident()
        self.stoppers: set[str] = set()
        """The tries whose code stopped this loop or raised out of it (since :func:`run_on`)."""
        self.cancellers: set[str] = set()
        """The tries whose code cancelled a task of this loop (since :func:`run_on`);
        :data:`ENDED` for an agent's whose try had ended."""

    def call_soon_threadsafe(  # type: ignore[override]
        self, callback: Callable[..., object], *args: Any, context: Any = None
    ) -> asyncio.Handle:
        who = agents_acting()
        if who is None:
            return super().call_soon_threadsafe(callback, *args, context=context)
        return super().call_soon_threadsafe(self._as, who, callback, *args, context=context)

    def _as(self, who: list[str], callback: Callable[..., object], *args: Any) -> None:
        before, self._acting = self._acting, who
        try:
            callback(*args)
        except (SystemExit, KeyboardInterrupt):
            self.stoppers.update(who)
            raise
        finally:
            self._acting = before

    def stop(self) -> None:
        self.stoppers.update(self.whose() or ())
        super().stop()

    def whose(self) -> list[str] | None:
        """The tries the call being made on this loop now is laid at, if any."""
        if threading.get_ident() == self._own:
            return self._acting  # in a callback handed over, or the harness's own
        return agents_acting()


ENDED = ""
"""In :attr:`HeldLoop.cancellers`: the code of an agent whose try had ended (a thread left
running), laid at no try."""


class _Task(asyncio.Task):  # type: ignore[type-arg]
    def cancel(self, msg: Any = None) -> bool:
        loop = self.get_loop()
        if isinstance(loop, HeldLoop) and (who := loop.whose()) is not None:
            loop.cancellers.update(who or (ENDED,))
        return super().cancel(msg)


def _task(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    return _Task(coro, loop=loop, **kwargs)


def cancellers() -> set[str]:
    """The tries whose code cancelled a task of the running loop (see :class:`HeldLoop`)."""
    loop = asyncio.get_running_loop()
    return loop.cancellers if isinstance(loop, HeldLoop) else set()


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run *main* to its end on a new event loop, as ``asyncio.run`` does (the loop closed
    after it, its tasks cancelled, its async generators and default executor shut down),
    holding the loop against the stops described above."""
    context = contextvars.copy_context()
    context.run(OWNED.set, True)
    with asyncio.Runner(loop_factory=HeldLoop) as runner:
        asyncio.set_event_loop(runner.get_loop())  # as asyncio.run has it
        try:
            return run_on(runner.get_loop(), main, context, always=True)
        finally:
            asyncio.set_event_loop(None)


def run_on(
    loop: asyncio.AbstractEventLoop,
    main: Coroutine[Any, Any, T],
    context: contextvars.Context,
    *,
    always: bool = False,
) -> T:
    """Run *main* to its end on *loop* in *context* (``asyncio.Runner.run`` off the main
    thread, as :mod:`groundstate.loopthreads` runs attempts), holding the loop while an
    in-process batch has tries in flight, or *always* (the batch's own loop, :func:`run`: a stop
    an agent made as it ran may take effect only once its try is being graded)."""
    if isinstance(loop, HeldLoop):  # what the work before left noted is not this work's
        loop.stoppers.clear()
        loop.cancellers.clear()
    task = loop.create_task(main, context=context)
    while True:
        try:
            return loop.run_until_complete(task)
        except BaseException as error:
            what = disruption(error, task)
            if what is None or not (loop_disrupted(what, _stoppers(loop)) or always):
                raise  # no batch to hold it for: it ends the work as under asyncio.run


def _stoppers(loop: asyncio.AbstractEventLoop) -> set[str]:
    """Whose code the disruption just met was (taken: the next is told afresh)."""
    if not isinstance(loop, HeldLoop):
        return set()
    who, loop.stoppers = loop.stoppers, set()
    return who


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

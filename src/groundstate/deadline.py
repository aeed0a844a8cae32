"""Hard time limits for code groundstate does not control (agents, Python checks).

Python cannot stop a thread, and code that blocks (``time.sleep``, a synchronous HTTP client)
or spins never gives an ``asyncio`` timeout a chance to fire. So such code runs in a daemon
thread of its own, and the caller stops *waiting* for it at the deadline: the attempt goes on
(and ends) without it. A thread left running cannot touch the attempt any more (the session
refuses its calls) and does not keep the process alive at exit. CPU time it still burns is
shared with the rest of the process until it returns; code that must be killed outright
belongs in a separate process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from groundstate.capture import in_context

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """The code did not finish within its time limit."""


class CalledCodeExited(RuntimeError):
    """The code raised ``SystemExit``, ``KeyboardInterrupt`` or another ``BaseException``."""


class _Outcome(Generic[T]):
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: T | None = None
        self.error: BaseException | None = None


def call_with_time_limit(fn: Callable[[], T], limit: float, name: str = "groundstate-call") -> T:
    """Return ``fn()``, or raise :class:`DeadlineExceeded` after *limit* seconds.

    Exceptions raised by *fn* are re-raised here, in the caller's thread. ``SystemExit``,
    ``KeyboardInterrupt`` and other non-``Exception`` errors raised by *fn* are *fn*'s faults,
    not requests to stop this process: they come back as :class:`CalledCodeExited`.
    """
    outcome: _Outcome[T] = _Outcome()

    def target() -> None:
        try:
            outcome.value = fn()
        except Exception as exc:
            outcome.error = exc
        except BaseException as exc:  # handed to the caller as an ordinary error
            outcome.error = CalledCodeExited(f"raised {type(exc).__name__}: {exc}")
            outcome.error.__cause__ = exc
        finally:
            outcome.done.set()

    threading.Thread(target=in_context(target), name=name, daemon=True).start()
    if not outcome.done.wait(limit):
        raise DeadlineExceeded(f"did not finish within {limit:g}s")
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]

"""The ``groundstate`` command: each command parses, makes one library call and renders.

Commands live in modules by concern (``runs``: running and reading batches; ``tasks``:
validating and locking suites; ``systems``: system files) and register on :data:`main`.

Startup is kept short: a command module imports only ``click`` at the top and the library
inside each command, so ``groundstate --help`` and ``--version`` load no numpy, pydantic, rich
or jinja2 (``tests/test_startup.py`` holds every command module to this).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from groundstate import __version__
from groundstate.errors import GroundstateError, SpecError, one_line, shortened
from groundstate.paths import DEFAULT_STORE, os_reason

if TYPE_CHECKING:
    from rich.console import Console

F = TypeVar("F", bound=Callable[..., Any])

STORE_OPTION = click.option(
    "--store",
    type=click.Path(path_type=Path),
    default=DEFAULT_STORE,
    show_default=True,
    help="Run store database (artifacts go beside it).",
)

MAX_SEED = 2**32 - 1
"""The largest seed an option takes (every ``--seed``, from 0): an attempt's seed is 32 bits
(:func:`groundstate.runner.derive_seed`), as numpy's legacy ``seed()`` takes. Unbounded, ``run
--seed -5`` and ``--seed 99999999999999999999999`` were stored with the batch (a number past
64 bits, which other readers of its JSON cannot hold)."""


def seed_option(help: str) -> Callable[[F], F]:
    """``--seed``, 0 to :data:`MAX_SEED` (default 0): one range for every command."""
    return click.option(
        "--seed",
        type=click.IntRange(0, MAX_SEED),
        default=0,
        show_default=True,
        help=help,
    )


def console() -> Console:
    """A console for tables: the terminal's width, or a roomy fixed width when piped. Emoji
    codes off: a task id or reason ``:white_check_mark:`` would print as a check mark."""
    from rich.console import Console

    return Console(emoji=False) if sys.stdout.isatty() else Console(emoji=False, width=140)


_LINK_LOOP = re.compile(r"Symlink loop from '(.*)'", re.DOTALL)


class _Group(click.Group):
    """Turns user errors into one clear line and exit code 2, never a traceback."""

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        """As click's; run as the process's command (no *args*: ``groundstate``, ``python -m
        groundstate``), it ends through :func:`groundstate.leftovers.leave`, which does not
        wait for what in-process code (an agent) left running: a thread started with
        ``daemon=False``, an executor of its own at work, an ``atexit`` handler that blocks
        held ``run`` open after its batch was stored and printed. A test runner's call
        (*args* given) returns as click's does."""
        if args is not None:
            return super().main(args, *rest, **kwargs)
        from groundstate.interrupts import watch_ctrl_c
        from groundstate.leftovers import leave, refuse_quiet_exit

        watch_ctrl_c()  # a KeyboardInterrupt user code raises is then told from a Ctrl-C
        refuse_quiet_exit()  # and user code's os._exit(0) from the command's success
        try:
            super().main(*rest, **kwargs)
        except SystemExit as exc:
            code = exc.code
        else:
            code = 0
        leave(code)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with _one_style():  # `groundstate --nope`: the group's own options
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _said_on_stderr(), _one_style():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            _stopped()
        except GroundstateError as exc:
            if isinstance(exc, SpecError):  # located as `check` locates it
                from groundstate.spec.files import with_line

                exc = with_line(exc)
            _refusal(exc)
            sys.exit(2)
        except OSError as exc:  # a path given that cannot be made or read: a parent is a
            if exc.filename is None:  # file, a link loops, the disk is full or read-only
                raise
            where = os.fsdecode(exc.filename)
            why = os_reason(Path(where), exc)
            click.echo(f"error: {said(where)}: {said(why)}", err=True)
            sys.exit(2)
        except RuntimeError as exc:  # Python 3.11's Path.resolve() on a link loop (an OSError
            loop = _LINK_LOOP.fullmatch(str(exc))  # from 3.13, caught above)
            if loop is None:
                raise
            click.echo(f"error: {said(loop[1])}: a loop of symbolic links", err=True)
            sys.exit(2)


def _refusal(exc: GroundstateError) -> None:
    """*exc* on stderr: one ``error: ...`` line; a listed error's items each on a line of its
    own under it (``run``'s invalid tasks printed "...:\\n  a: ..." on one line), and each of
    several errors on an ``error:`` line of its own (``run`` on a suite with ten problems
    printed them on one line joined by a literal ``\\n``)."""
    lines = str(exc).split("\n") if exc.listed or exc.several else [str(exc)]
    for number, line in enumerate(lines):
        item = exc.listed and number > 0
        click.echo(f"  {said(line.strip())}" if item else f"error: {said(line)}", err=True)


def said(text: str) -> str:
    """*text* as a refusal's (or a warning's) line shows it: one line, nothing hidden
    (:func:`one_line`), a long value shortened (:func:`shortened`: a 5,000-digit ``--seed``
    named, not echoed)."""
    return shortened(one_line(text))


@contextmanager
def _one_style() -> Iterator[None]:
    """Click's own errors (an unknown option, a number out of its range, a missing argument)
    said as the library's are: one ``error: ...`` line on stderr, with exit 2 for a usage
    error, then where help is (click printed the usage first and ``Error: ...`` last). A group
    given no command still prints its help."""
    try:
        yield
    except click.exceptions.NoArgsIsHelpError:
        raise
    except click.ClickException as exc:
        message = exc.format_message()
        if isinstance(exc, click.MissingParameter):  # "Choose from:\n\tjsonl,\n\tcsv": one line
            message = message.replace(":\n\t", ": ").replace(",\n\t", ", ")
        click.echo(f"error: {said(message)}", err=True)
        context = getattr(exc, "ctx", None)
        if context is not None and context.command.get_help_option(context) is not None:
            click.echo(f"Try '{context.command_path} --help' for help.", err=True)
        sys.exit(exc.exit_code)


@contextmanager
def _said_on_stderr() -> Iterator[None]:
    """While a command runs, what the library logs for the user (``groundstate.store``: a
    write waiting for another process's lock) is printed on stderr, ``groundstate: ...``, and
    only there (not also through a handler in-process code gave the root logger). The
    library prints nothing itself: a library caller is not written to."""
    import logging

    class _Say(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            click.echo(f"groundstate: {one_line(record.getMessage())}", err=True)

    logger = logging.getLogger("groundstate.store")
    handler, propagate = _Say(logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def _stopped() -> None:
    """A ``KeyboardInterrupt`` out of a command: exit 130 for the user's Ctrl-C, as a shell
    reports SIGINT (and as ``run`` does), not click's "Aborted!" with exit 1, which means
    "a task is not valid" to ``validate`` and "records are altered" to ``verify``; one that
    code the command ran raised itself, with no Ctrl-C, is said so (exit 70, as user code
    that ends the process with status 0 is)."""
    from groundstate.interrupts import from_ctrl_c

    if from_ctrl_c():
        click.echo("error: interrupted (Ctrl-C): the command stopped before it was done", err=True)
        sys.exit(130)
    from groundstate.leftovers import ENDED_BY_USER_CODE

    click.echo(
        "error: code the command ran (a suite's, a system's or an agent's module) raised "
        "KeyboardInterrupt with no Ctrl-C pressed: the command stopped before it was done",
        err=True,
    )
    sys.exit(ENDED_BY_USER_CODE)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="groundstate")
def main() -> None:
    """Evaluate tool-using agents by the state they leave behind."""


from groundstate.cli import (  # noqa: E402  (commands register)
    check,
    diagnosis,
    envs,
    integrity,
    interop,
    play,
    runs,
    systems,
    tasks,
    tau2,
    workflow,
)

__all__ = [
    "DEFAULT_STORE",
    "MAX_SEED",
    "STORE_OPTION",
    "check",
    "console",
    "diagnosis",
    "envs",
    "integrity",
    "interop",
    "main",
    "play",
    "runs",
    "said",
    "seed_option",
    "systems",
    "tasks",
    "tau2",
    "workflow",
]

"""The PostgreSQL server the ``postgres`` kind works in: a private one, or one given by URL.

By default groundstate starts a private server for the process: ``initdb`` and ``pg_ctl`` into a
temporary folder, listening only on a Unix socket in that folder, with durability off (every
database in it is scratch), stopped and removed at exit. The binaries are looked up in
``GROUNDSTATE_POSTGRES_BIN`` (a folder), then on ``PATH``, then in ``/usr/lib/postgresql/*/bin``
(the newest version). ``initdb`` refuses to run as root, so a root process runs the server as
the unprivileged ``postgres`` system user (the one Debian's package creates) through ``runuser``
or ``setpriv``.

With ``GROUNDSTATE_POSTGRES_URL`` set (``postgresql://user:password@host:port/dbname``), that
server is used instead; its user needs ``CREATEDB`` and ``CREATEROLE``. Everything groundstate
makes there (databases ``gs_<token>_*``, roles ``gs_<token>_*``) is dropped at exit.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundstate.errors import EnvironmentFailure
from groundstate.leftovers import at_exit

if TYPE_CHECKING:  # imported where used: the executors read URL_VARIABLE without the extra
    import psycopg

URL_VARIABLE = "GROUNDSTATE_POSTGRES_URL"
BIN_VARIABLE = "GROUNDSTATE_POSTGRES_BIN"
SERVER_USER = "postgres"
"""The system user a root process runs its private server as."""
_SUPERUSER = "groundstate"
_SETTINGS = (
    "listen_addresses=''",
    "fsync=off",
    "full_page_writes=off",
    "synchronous_commit=off",
    "max_connections=500",  # four per environment in flight
)


class PostgresServer:
    """One server: connections to its databases, and the roles groundstate made there."""

    def __init__(self, conninfo: dict[str, Any], *, private_dir: Path | None = None) -> None:
        self._conninfo = conninfo
        self._private_dir = private_dir
        self.pid = os.getpid()
        """The process that made this object: only it may use or stop it (not a fork)."""
        self.watchdog: subprocess.Popen[bytes] | None = None
        """The process that stops a private server if this one dies without stopping it."""
        self.token = secrets.token_hex(4)
        """Names of everything this process makes start with ``gs_<token>_``."""
        self.agent_role = f"gs_{self.token}_agent"
        self.evaluator_role = f"gs_{self.token}_evaluator"
        self._passwords = {role: secrets.token_hex(16) for role in self.roles}
        self._admin_lock = threading.Lock()
        self._admin = self.connect("postgres")
        self.version = int(self._admin.info.server_version)
        self.admin(
            *[f"CREATE ROLE \"{r}\" LOGIN PASSWORD '{p}'" for r, p in self._passwords.items()]
        )

    @property
    def roles(self) -> tuple[str, str]:
        return self.agent_role, self.evaluator_role

    def connect(
        self, dbname: str, role: str | None = None, *, options: str | None = None
    ) -> psycopg.Connection[Any]:
        """An autocommit connection to *dbname*, as the admin or as one of our roles."""
        info = dict(self._conninfo, dbname=dbname)
        if options is not None:
            info["options"] = options
        if role is not None:
            info.update(user=role, password=self._passwords[role])
        import psycopg

        try:
            return psycopg.connect(autocommit=True, **info)
        except psycopg.Error as exc:
            raise EnvironmentFailure(f"postgres: cannot connect to {dbname}: {exc}") from exc

    def admin(self, *statements: str) -> None:
        """Run statements on the maintenance database, one at a time (CREATE/DROP DATABASE)."""
        with self._admin_lock:
            for sql in statements:
                self._admin.execute(sql.encode())

    def clone(self, template: str, target: str) -> None:
        """Create *target* as a copy of *template* (file copy: fastest for small databases)."""
        strategy = " STRATEGY FILE_COPY" if self.version >= 150000 else ""
        self.admin(f'CREATE DATABASE "{target}" TEMPLATE "{template}"{strategy}')

    def drop(self, database: str) -> None:
        force = " WITH (FORCE)" if self.version >= 130000 else ""
        self.admin(f'DROP DATABASE IF EXISTS "{database}"{force}')

    @property
    def url(self) -> str:
        """A connection string for this server (as the admin), for child processes."""
        from psycopg.conninfo import make_conninfo

        return make_conninfo(**self._conninfo)

    def close(self) -> None:
        """Drop what this process made and stop a private server (in the process that
        started it: a forked child's copy of this object leaves the server alone)."""
        if os.getpid() != self.pid:
            return
        try:
            if self._private_dir is None:
                self._drop_own()
            self._admin.close()
        finally:
            if self._private_dir is not None:
                _stop(self._private_dir)
            if self.watchdog is not None:  # its work is done
                self.watchdog.kill()
                self.watchdog.wait()

    def _drop_own(self) -> None:
        rows = self._admin.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (f"gs\\_{self.token}\\_%",)
        ).fetchall()
        for (name,) in rows:
            self.admin(f'ALTER DATABASE "{name}" IS_TEMPLATE false')
            self.drop(name)
        self.admin(*[f'DROP ROLE IF EXISTS "{role}"' for role in self.roles])


_SHARED: PostgresServer | None = None
_SHARED_LOCK = threading.Lock()


def shared_server() -> PostgresServer:
    """The process's server: from ``GROUNDSTATE_POSTGRES_URL``, or a private one started now."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None or _SHARED.pid != os.getpid():  # a forked child makes its own
            _SHARED = _from_url(os.environ[URL_VARIABLE]) if os.environ.get(URL_VARIABLE) else None
            _SHARED = _SHARED or _private_for_children()
            at_exit(_SHARED.close)
        return _SHARED


def _private_for_children() -> PostgresServer:
    """A private server whose URL child processes inherit (a process-pool or distributed
    executor's workers then share it, each with its own roles and databases)."""
    server = start_private_server()
    os.environ[URL_VARIABLE] = server.url
    return server


def _from_url(url: str) -> PostgresServer:
    import psycopg

    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise EnvironmentFailure(f"{URL_VARIABLE} is not a connection string: {exc}") from exc
    return PostgresServer(info)


def start_private_server() -> PostgresServer:
    """initdb + pg_ctl start into a new temporary folder; the server listens on a socket there."""
    binaries = find_binaries()
    sweep_stale(Path(tempfile.gettempdir()))
    folder = Path(tempfile.mkdtemp(prefix=PREFIX))
    run_as = _run_as()
    if run_as:
        shutil.chown(folder, SERVER_USER)
    data = folder / "data"
    _run(run_as, [str(binaries / "initdb"), "-D", str(data), "-U", _SUPERUSER, "--auth=trust",
                  "-E", "UTF8", "--no-locale", "--no-sync"], "initdb")  # fmt: skip
    options = " ".join(f"-c {setting}" for setting in _SETTINGS) + f" -k {folder}"
    _run(run_as, [str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"),
                  "-w", "-o", options, "start"], "pg_ctl start")  # fmt: skip
    (folder / "pg_ctl").symlink_to(binaries / "pg_ctl")
    try:
        server = PostgresServer({"host": str(folder), "user": _SUPERUSER}, private_dir=folder)
    except BaseException:
        _stop(folder)
        raise
    server.watchdog = _watchdog(folder)
    return server


PREFIX = "groundstate-pg-"
STALE_AFTER = 600.0
"""Seconds a private server's folder with no server running in it is left alone (one being
made has none yet)."""


def sweep_stale(parent: Path) -> list[Path]:
    """Remove the private servers' folders in *parent* that no server runs in (no live
    postmaster) and that nothing has added to for :data:`STALE_AFTER` seconds, and say which.
    Their owner died with its watchdog (a container or machine stopped mid-run): each held
    gigabytes, and a few such runs filled the disk."""
    swept = []
    for folder in parent.glob(f"{PREFIX}*"):
        with suppress(OSError):
            if time.time() - folder.stat().st_mtime < STALE_AFTER or _serving(folder):
                continue
            shutil.rmtree(folder)
            swept.append(folder)
    return swept


def _serving(folder: Path) -> bool:
    """Whether a server runs in *folder* (its ``postmaster.pid`` names a live process; a
    process of another user's counts as live)."""
    try:
        pid = int((folder / "data" / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


_WATCHDOG = """
import os, shutil, subprocess, sys, time
owner, folder, command = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
while True:
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        break
    time.sleep(1)
subprocess.run(command, capture_output=True, timeout=60)
shutil.rmtree(folder, ignore_errors=True)
"""
"""Stops a private server whose owner died without its exit hooks (SIGKILL, an unhandled
SIGTERM): a server cannot be told to die with its parent."""


def _watchdog(folder: Path) -> subprocess.Popen[bytes]:
    stop = [*_run_as(), str(folder / "pg_ctl"), "-D", str(folder / "data"), "-m", "immediate"]
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(folder), *stop, "stop"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C to the owner's process group must not kill it first
    )


def find_binaries() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl``; raises EnvironmentFailure naming where
    it looked."""
    configured = os.environ.get(BIN_VARIABLE)
    candidates = [Path(configured)] if configured else []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "pg_ctl").is_file():
            return folder
    raise EnvironmentFailure(
        f"postgres: no initdb/pg_ctl found (looked in ${BIN_VARIABLE}, PATH and "
        f"/usr/lib/postgresql/*/bin); install PostgreSQL or set {URL_VARIABLE}"
    )


def _version(folder: Path) -> float:
    try:
        return float(folder.parent.name)
    except ValueError:
        return 0.0


def _run_as() -> list[str]:
    """The prefix that runs a command as the server user when this process is root."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(SERVER_USER)
    except KeyError as exc:
        raise EnvironmentFailure(
            f"postgres: running as root, and there is no {SERVER_USER!r} user to run the "
            "server as (initdb refuses root)"
        ) from exc
    if shutil.which("runuser"):
        return ["runuser", "-u", SERVER_USER, "--"]
    return ["setpriv", f"--reuid={SERVER_USER}", f"--regid={SERVER_USER}", "--init-groups"]


def _run(prefix: list[str], command: list[str], what: str) -> None:
    try:
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        raise EnvironmentFailure(
            f"postgres: {what} failed: {exc} {detail.decode(errors='replace')[-500:]}"
        ) from exc


def _stop(folder: Path) -> None:
    pg_ctl = folder / "pg_ctl"
    if pg_ctl.exists():
        with _quiet():
            subprocess.run(
                [*_run_as(), str(pg_ctl), "-D", str(folder / "data"), "-m", "immediate", "stop"],
                capture_output=True,
                timeout=60,
            )
    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def _quiet() -> Iterator[None]:
    """At exit a failed stop must not hide the run's own outcome; the folder goes anyway."""
    with suppress(OSError, subprocess.SubprocessError):
        yield

"""Twenty-seventh validation audit: verdicts resting on the machine, not on the final state.

- A check reading a database outside the suite by SQL (``ATTACH DATABASE '/x.db'`` through
  ``sT.query``, or on a connection of its own) or testing whether an outside file exists
  (``Path.exists()``, ``os.path.exists``, ``os.stat``, ``os.access``: no audit event) passed
  ``grader_determinism``: the watch of reads saw files opened and folders listed only. The
  graders' connection now reports each database attached, a connection the suite's code opens
  does too, and the look-ups of a file are watched, found or not. A file or folder made while
  graded (``tempfile.mkdtemp``, a file written) is the check's own, not the machine's.
- A check resting on the machine it runs on (``getpass.getuser()``, ``platform.node()``,
  ``socket.gethostname()``, ``os.getpid()``, ``os.cpu_count()``, ``os.uname()``,
  ``os.getuid()``) agreed with itself in every grading: the skewed gradings now run on a
  machine named ``groundstate-low``, then ``groundstate-high``, as the suite's code sees it
  (imported in a function's body too).
- A check resting on whether the machine keeps summer time (``time.localtime().tm_isdst``)
  agreed with itself: the low time zone is UTC+14 as summer time.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import groundstate.validation.skew as skew
from groundstate.spec.suite import Suite, load_suite
from groundstate.validation.checks import validate_task
from groundstate.validation.skew import outside_reads, skewed

from .test_validation_round24 import _copy
from .test_validation_round25 import _suite_code

PROBE = """

{imports}


def probe(s0: Any, sT: Any) -> bool:
    {body}
    return ok and money_conserved(s0, sT)[0]
"""


def _probing(tmp_path: Path, imports: str, body: str) -> Suite:
    root = _copy(tmp_path)
    checks = root / "checks.py"
    code = PROBE.format(imports=imports, body=body.replace("\n", "\n    "))
    checks.write_text(checks.read_text() + code)
    task_file = root / "tasks" / "transfer.yaml"
    task_file.write_text(
        task_file.read_text().replace("checks.py:money_conserved", "checks.py:probe")
    )
    return load_suite(root)


def _determinism(suite: Suite) -> Any:
    validity = validate_task(suite, "transfer")
    assert validity.check("solvable").passed, validity.check("solvable").detail
    return validity.check("grader_determinism")


# --- files outside the suite, attached or looked up --------------------------------------------


def _outside(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    with sqlite3.connect(folder / "expected.db") as db:
        db.execute("CREATE TABLE t (x)")
        db.execute("INSERT INTO t VALUES (1)")
    db.close()
    (folder / "flag").write_text("")
    return folder


LOOKED_UP = {
    "attach-graders": (
        "",
        "sT.query(\"ATTACH DATABASE '{folder}/expected.db' AS o\")\n"
        "ok = sT.query('SELECT count(*) FROM o.t')[0][0] == 1\n"
        "sT.query('DETACH DATABASE o')",
        "expected.db",
    ),
    "attach-own": (
        "import sqlite3",
        "db = sqlite3.connect(':memory:')\n"
        "db.execute(\"ATTACH DATABASE '{folder}/expected.db' AS o\")\n"
        "ok = db.execute('SELECT count(*) FROM o.t').fetchone()[0] == 1",
        "expected.db",
    ),
    "path-exists": ("from pathlib import Path", "ok = Path('{folder}/flag').exists()", "flag"),
    "path-missing": (
        "",
        "from pathlib import Path\nok = not Path('{folder}/lock').exists()",
        "lock",
    ),
    "os-path-exists": ("import os", "ok = os.path.exists('{folder}/flag')", "flag"),
    "os-stat": ("", "import os\nok = os.stat('{folder}/flag').st_size == 0", "flag"),
    "os-access": ("from os import access, F_OK", "ok = access('{folder}/flag', F_OK)", "flag"),
}


@pytest.mark.parametrize("how", sorted(LOOKED_UP))
def test_a_check_attaching_or_looking_up_a_file_outside_the_suite_fails(
    tmp_path: Path, how: str
) -> None:
    folder = _outside(tmp_path)
    imports, body, name = LOOKED_UP[how]
    check = _determinism(_probing(tmp_path, imports, body.format(folder=folder)))
    assert not check.passed, check.detail
    assert f"a check reads {(folder / name).resolve()}, outside the suite's folder" in check.detail


def test_a_check_looking_up_files_it_made_while_graded_passes(tmp_path: Path) -> None:
    """Control: a scratch folder and file of the check's own (``mkdtemp``, ``makedirs``,
    ``mkstemp``), looked up and removed, and its own files found from ``__file__``."""
    body = (
        "scratch = Path(tempfile.mkdtemp())\n"
        "(scratch / 'out.txt').write_text('1')\n"
        "os.makedirs(scratch / 'a' / 'b')\n"
        "fd, name = tempfile.mkstemp()\n"
        "os.close(fd)\n"
        "ok = (scratch / 'out.txt').exists() and (scratch / 'a' / 'b').is_dir()\n"
        "ok = ok and os.path.exists(name) and Path(__file__).resolve().exists()\n"
        "shutil.rmtree(scratch)\n"
        "os.unlink(name)"
    )
    suite = _probing(tmp_path, "import os, shutil, tempfile\nfrom pathlib import Path", body)
    check = _determinism(suite)
    assert check.passed, check.detail


def test_the_watch_notes_look_ups_by_the_suites_code_only(tmp_path: Path) -> None:
    root, outside = tmp_path / "suite", tmp_path / "elsewhere"
    root.mkdir(), outside.mkdir()
    (root / "data.json").write_text("{}")
    code = "import os\nfrom pathlib import Path\n"
    code += "def exists(p): return Path(p).exists()\n"
    code += "def made(p): p.mkdir(parents=True); p.mkdir(exist_ok=True); os.makedirs(p / 'x')\n"
    code += "def own(): return (Path(__file__).resolve().parent / 'data.json').is_file()\n"
    namespace = _suite_code(root, code)
    found: dict[str, None] = {}
    real = (os.stat, os.lstat, os.access, sqlite3.connect)
    with outside_reads([namespace], root, found):
        assert namespace["own"]()  # the folders above the suite's, resolved: not noted
        assert found == {}
        assert os.path.exists(outside / "x") is False  # not the suite's code
        assert found == {}
        namespace["made"](outside / "new" / "deeper")  # looked up on the way: no read
        assert found == {}
        assert namespace["exists"](outside / "missing") is False
        assert list(found) == [str((outside / "missing").resolve())]
    assert (os.stat, os.lstat, os.access, sqlite3.connect) == real


# --- the machine -------------------------------------------------------------------------------

MACHINE = {
    "getuser": ("import getpass", "ok = getpass.getuser() == {real!r}", "getuser"),
    "node": ("", "import platform\nok = platform.node() == {real!r}", "node"),
    "hostname": ("from socket import gethostname", "ok = gethostname() == {real!r}", "hostname"),
    "getpid": ("import os", "ok = os.getpid() % 3 == {real!r}", "getpid"),
    "cpu_count": ("", "import os\nok = os.cpu_count() == {real!r}", "cpu_count"),
}


def _real(what: str) -> object:
    import getpass
    import platform

    return {
        "getuser": getpass.getuser,
        "node": platform.node,
        "hostname": socket.gethostname,
        "getpid": lambda: os.getpid() % 3,
        "cpu_count": os.cpu_count,
    }[what]()


@pytest.mark.parametrize("what", sorted(MACHINE))
def test_a_check_resting_on_the_machine_fails(tmp_path: Path, what: str) -> None:
    imports, body, _ = MACHINE[what]
    check = _determinism(_probing(tmp_path, imports, body.format(real=_real(what))))
    assert not check.passed, check.detail
    assert "gradings of one final state disagree" in check.detail
    assert "groundstate-low" in check.detail


def test_the_machine_is_skewed_for_the_suites_code_only(tmp_path: Path) -> None:
    code = "import os, socket\nfrom getpass import getuser\n"
    code += "def names():\n    import platform\n"
    code += "    return getuser(), socket.gethostname(), platform.node(), os.uname().nodename\n"
    code += "def numbers(): return os.getpid(), os.cpu_count(), os.getuid()\n"
    namespace = _suite_code(tmp_path, code)
    pid, host = os.getpid(), socket.gethostname()
    for high in (False, True):
        with skewed(high, [namespace]):
            assert namespace["names"]() == (skew.MACHINES[high],) * 4
            assert namespace["numbers"]() == ((1 << 22) - 1, 1024, 65534) if high else (2, 1, 0)
            assert (os.getpid(), socket.gethostname()) == (pid, host)  # not the suite's code
    assert namespace["numbers"]()[0] == pid
    assert namespace["names"]()[1] == host


# --- summer time -------------------------------------------------------------------------------


def test_a_check_resting_on_summer_time_fails(tmp_path: Path) -> None:
    import time

    body = f"ok = time.localtime().tm_isdst == {time.localtime().tm_isdst}"
    check = _determinism(_probing(tmp_path, "import time", body))
    assert not check.passed, check.detail
    assert "gradings of one final state disagree" in check.detail

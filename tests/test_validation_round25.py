"""Twenty-fifth validation audit: chance and files ``grader_determinism`` did not see.

- A stream of a class the suite derives from ``random.Random`` (``class Dice(random.Random)``),
  and a ``random.Random()`` a function holds in a default argument or a closure, drew as the
  real stream in every grading: a verdict left to them passed ``grader_determinism``. They
  draw near each end of the range now; a seeded one as before.
- numpy's chance (``np.random.random()``, ``np.random.default_rng()`` unseeded, a module's
  ``_RNG = np.random.default_rng()``, ``np.random.RandomState()``) was not skewed at all.
- The watch of the files a check reads missed those opened by an installed library for it
  (``numpy.loadtxt``, ``numpy.genfromtxt``), a SQLite database opened by a ``file:`` URI,
  ``linecache.getline``, and a folder listed outside the suite (``os.listdir``); and it took a
  time zone read by ``zoneinfo`` (the standard library's own data) for the check's file.
"""

from __future__ import annotations

import random
import sqlite3
import zoneinfo
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from groundstate.spec.canonical import hash_file
from groundstate.spec.suite import Suite, load_suite
from groundstate.validation.checks import validate_task
from groundstate.validation.skew import outside_reads, skewed

from .test_validation_round24 import _copy


def _suite_code(root: Path, code: str) -> dict[str, Any]:
    """*code* run as a module of the suite in *root*."""
    namespace: dict[str, Any] = {"__name__": "suite_checks", "__file__": str(root / "checks.py")}
    exec(compile(code, str(root / "checks.py"), "exec"), namespace)
    return namespace


# --- the suite's own stream classes, defaults and closures -------------------------------------

STREAMS = """
import random

class Dice(random.Random):
    def roll(self):
        return self.random()

class Named(random.Random):
    def __init__(self, name):
        super().__init__()
        self.name = name

class Seeded(random.Random):
    def __init__(self):
        super().__init__(42)

class Secure(random.SystemRandom):
    pass

_DICE = Dice()
_DICE_SEEDED = Dice(7)

def made(): return Dice().roll()
def named(): return Named("n").random()
def secure(): return Secure().random()
def kept(): return _DICE.roll()
def kept_seeded(): return _DICE_SEEDED.random()  # a module's stream: earlier draws move it
def default(rng=random.Random()): return rng.random()
def keyword(*, rng=Dice()): return rng.random()
def _factory():
    rng = random.Random()
    def drawn(): return rng.random()
    return drawn
closure = _factory()
def seeded(): return Seeded().random()
"""

SKEWED_DRAWS = ["made", "named", "secure", "kept", "kept_seeded", "default", "keyword", "closure"]


@pytest.mark.parametrize("draw", SKEWED_DRAWS)
def test_the_suites_own_streams_draw_near_each_end(tmp_path: Path, draw: str) -> None:
    namespace = _suite_code(tmp_path, STREAMS)
    for high in (False, True):
        with skewed(high, [namespace], process_wide=False):
            value = namespace[draw]()
        assert value > 0.99 if high else value < 0.01, (draw, high, value)


def test_a_stream_seeded_by_its_own_class_draws_as_the_real_one(tmp_path: Path) -> None:
    """Control: ``Seeded()`` seeds itself where it is made: the same draws in every attempt."""
    namespace = _suite_code(tmp_path, STREAMS)
    expected = random.Random(42).random()
    for high in (False, True):
        with skewed(high, [namespace], process_wide=False):
            assert namespace["seeded"]() == expected


def test_the_suites_streams_defaults_and_closures_are_put_back(tmp_path: Path) -> None:
    namespace = _suite_code(tmp_path, STREAMS)
    before = dict(namespace)
    held = (
        namespace["default"].__defaults__,
        namespace["keyword"].__kwdefaults__,
        namespace["closure"].__closure__[0].cell_contents,
    )
    with skewed(True, [namespace], process_wide=False):
        assert isinstance(namespace["_DICE"], before["Dice"])  # still the suite's class
        assert isinstance(namespace["Dice"](), before["Dice"])
        assert namespace["default"].__defaults__ is not held[0]
    assert namespace == before
    assert held == (
        namespace["default"].__defaults__,
        namespace["keyword"].__kwdefaults__,
        namespace["closure"].__closure__[0].cell_contents,
    )
    assert type(namespace["_DICE"]) is namespace["Dice"]


# --- numpy's chance ----------------------------------------------------------------------------

NUMPY = """
import numpy as np
import numpy.random as npr
from numpy.random import default_rng, rand

_RNG = np.random.default_rng()
_SEEDED = np.random.default_rng(7)
_STATE = np.random.RandomState()

def legacy(): return float(np.random.random())
def legacy_rand(): return float(rand())
def legacy_randint(): return int(np.random.randint(1000)) / 1000
def legacy_choice(): return int(npr.choice(1000)) / 1000
def unseeded(): return float(default_rng().random())
def unseeded_integers(): return int(np.random.default_rng().integers(1000)) / 1000
def kept(): return float(_RNG.random())
def kept_seeded(): return float(_SEEDED.uniform())
def state(): return float(_STATE.random_sample())
def new_state(): return float(np.random.RandomState().uniform())
def seeded(): return float(np.random.default_rng(42).random())
def seeded_state(): return float(np.random.RandomState(3).uniform())
def normal(): return float(np.random.default_rng().normal())
"""

NUMPY_DRAWS = [
    "legacy",
    "legacy_rand",
    "legacy_randint",
    "legacy_choice",
    "unseeded",
    "unseeded_integers",
    "kept",
    "kept_seeded",
    "state",
    "new_state",
]


@pytest.mark.parametrize("process_wide", [False, True])
@pytest.mark.parametrize("draw", NUMPY_DRAWS)
def test_numpys_chance_draws_near_each_end(tmp_path: Path, draw: str, process_wide: bool) -> None:
    namespace = _suite_code(tmp_path, NUMPY)
    for high in (False, True):
        with skewed(high, [namespace], process_wide=process_wide):
            value = namespace[draw]()
        assert value >= 0.99 if high else value < 0.01, (draw, high, value)


def test_numpys_seeded_streams_draw_as_the_real_ones(tmp_path: Path) -> None:
    """Control: seeded where they are made, and a normal draw (a rejection loop) ends."""
    namespace = _suite_code(tmp_path, NUMPY)
    expected = (np.random.default_rng(42).random(), np.random.RandomState(3).uniform())
    for high in (False, True):
        with skewed(high, [namespace]):
            assert (namespace["seeded"](), namespace["seeded_state"]()) == expected
            assert isinstance(namespace["normal"](), float)


def test_numpys_chance_is_put_back(tmp_path: Path) -> None:
    namespace = _suite_code(tmp_path, NUMPY)
    before, module = dict(namespace), dict(vars(np.random))
    with skewed(True, [namespace]):
        assert np.random.random() > 0.99  # process-wide: as a library the check calls draws
        assert isinstance(namespace["_RNG"], np.random.Generator)
    assert namespace == before and dict(vars(np.random)) == module
    assert not all(np.random.random() > 0.99 for _ in range(20))


# --- grader_determinism on such checks ---------------------------------------------------------


@pytest.fixture
def lucky(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real streams draw 0.5: the unskewed gradings are lucky every time."""
    monkeypatch.setattr(random.Random, "random", lambda self: 0.5)
    monkeypatch.setattr(np.random, "random", lambda *args: 0.5)


SPOT_CHECK = '''

import random
import numpy as np
{head}

def sampled(s0: Any, sT: Any) -> bool:
    """Passes by chance (a careless spot check)."""
    return {draw} > 0.01 and money_conserved(s0, sT)[0]
'''


def _checked_by(tmp_path: Path, code: str) -> Suite:
    root = _copy(tmp_path)
    checks = root / "checks.py"
    checks.write_text(checks.read_text() + code)
    task_file = root / "tasks" / "transfer.yaml"
    task_file.write_text(
        task_file.read_text().replace("checks.py:money_conserved", "checks.py:sampled")
    )
    return load_suite(root)


@pytest.mark.parametrize(
    ("head", "draw"),
    [
        ("class Dice(random.Random):\n    pass\n", "Dice().random()"),
        ("", "np.random.random()"),
    ],
    ids=["random-subclass", "numpy-legacy"],
)
def test_a_check_drawing_from_chance_validation_missed_fails(
    tmp_path: Path, head: str, draw: str, lucky: None
) -> None:
    suite = _checked_by(tmp_path, SPOT_CHECK.format(head=head, draw=draw))
    validity = validate_task(suite, "transfer")
    check = validity.check("grader_determinism")
    assert validity.check("solvable").passed, validity.check("solvable").detail
    assert not check.passed, check.detail
    assert "gradings of one final state disagree" in check.detail


# --- files read for a check by a library, a URI, a listing -----------------------------------

READERS = {
    "loadtxt": "np.loadtxt(E / 'data.txt')",
    "genfromtxt": "np.genfromtxt(E / 'data.txt')",
    "sqlite-uri": "sqlite3.connect('file:' + str(E / 'db.sqlite') + '?mode=ro', uri=True)"
    ".execute('SELECT x FROM t').fetchall()",
    "listdir": "os.listdir(E)",
    "linecache": "linecache.getline(str(E / 'data.txt'), 1)",
}


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    root, elsewhere = tmp_path / "suite", tmp_path / "elsewhere"
    root.mkdir(), elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("1 2\n3 4\n")
    with sqlite3.connect(elsewhere / "db.sqlite") as db:
        db.execute("CREATE TABLE t (x)")
    return root, elsewhere


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_read_outside_the_suite_through_a_library_is_seen(tmp_path: Path, reader: str) -> None:
    root, elsewhere = _folders(tmp_path)
    code = "import linecache, os, sqlite3\nimport numpy as np\nfrom pathlib import Path\n"
    code += f"E = Path({str(elsewhere)!r})\ndef read(): return {READERS[reader]}\n"
    namespace = _suite_code(root, code)
    found: dict[str, None] = {}
    with outside_reads([namespace], root, found):
        namespace["read"]()
    assert found, reader
    assert all(Path(f).is_relative_to(elsewhere.resolve()) for f in found)


def _needs_time_zones() -> None:
    try:
        zoneinfo.ZoneInfo("Europe/Paris")
        zoneinfo.ZoneInfo("America/New_York")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time zone database on this machine")


def test_reads_by_the_standard_library_and_the_harness_for_themselves_are_not_the_checks(
    tmp_path: Path,
) -> None:
    """Controls: a time zone (``zoneinfo``, from C), groundstate's own code reading a file
    (as a view reads its database), and a library reading inside the suite."""
    _needs_time_zones()
    root, elsewhere = _folders(tmp_path)
    (root / "data.txt").write_text("5 6\n")
    code = (
        "import zoneinfo\nimport numpy as np\nfrom pathlib import Path\n"
        "def zone():\n    zoneinfo.ZoneInfo.clear_cache()\n"
        "    return zoneinfo.ZoneInfo('Europe/Paris')\n"
        "def harness(path, hash_file): return hash_file(path)\n"
        "def own(): return np.loadtxt(Path(__file__).parent / 'data.txt')\n"
    )
    namespace = _suite_code(root, code)
    found: dict[str, None] = {}
    with outside_reads([namespace], root, found):
        namespace["zone"]()
        namespace["harness"](elsewhere / "data.txt", hash_file)
        namespace["own"]()
    assert found == {}


def test_a_check_reading_an_outside_file_with_numpy_fails(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "expected.txt"
    outside.parent.mkdir()
    outside.write_text("70 80\n")
    code = f'''

import numpy as np


def sampled(s0: Any, sT: Any) -> bool:
    """Compares with expected balances kept outside the suite."""
    expected = np.loadtxt({str(outside)!r}).tolist()
    rows = sT.query("SELECT balance FROM accounts WHERE id IN ('A', 'B') ORDER BY id")
    return [r[0] for r in rows] == expected
'''
    validity = validate_task(_checked_by(tmp_path, code), "transfer")
    check = validity.check("grader_determinism")
    assert validity.check("solvable").passed, validity.check("solvable").detail
    assert not check.passed, check.detail
    assert f"a check reads {outside.resolve()}, outside the suite's folder" in check.detail


def test_a_check_reading_a_time_zone_still_passes(tmp_path: Path) -> None:
    """Control (wrongly failed before): ``ZoneInfo`` reads the system's time zone database."""
    _needs_time_zones()
    code = '''

import zoneinfo
from datetime import datetime


def sampled(s0: Any, sT: Any) -> bool:
    """Money conserved, checked with a date in a named time zone (as a report would)."""
    zoneinfo.ZoneInfo.clear_cache()
    zone = zoneinfo.ZoneInfo("America/New_York")
    return datetime(2026, 1, 15, tzinfo=zone).utcoffset() is not None and money_conserved(
        s0, sT
    )[0]
'''
    validity = validate_task(_checked_by(tmp_path, code), "transfer")
    check = validity.check("grader_determinism")
    assert check.passed, check.detail


def test_a_folder_the_check_removes_is_no_read(tmp_path: Path) -> None:
    """Control: ``shutil.rmtree`` lists a folder (a scratch folder the check made) to remove
    it, which is not reading it; ``os.listdir`` of the same folder is."""
    root, elsewhere = _folders(tmp_path)
    scratch = elsewhere / "scratch"
    code = "import os, shutil\ndef remove(p): os.makedirs(p / 'x'); shutil.rmtree(p)\n"
    code += "def listed(p): return os.listdir(p)\n"
    namespace = _suite_code(root, code)
    found: dict[str, None] = {}
    with outside_reads([namespace], root, found):
        namespace["remove"](scratch)
        assert found == {}
        namespace["listed"](elsewhere)
    assert list(found) == [str(elsewhere.resolve())]

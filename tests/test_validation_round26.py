"""Twenty-sixth validation audit: the order a folder lists in, and the cost of the skewed
gradings.

- A check resting on the order ``os.listdir``, ``os.scandir``, ``Path.iterdir``, ``glob`` or
  ``os.walk`` give a folder of the suite's own (the file system's order: another machine, or
  a copy of the suite, lists it otherwise) agreed with itself in every grading. One grading
  of ``grader_determinism`` now gives the suite's code its listings in reverse order.
- Each skewed grading and each later attempt under skewed tools made the harness's watch of
  its own code throw away its row of some 14,000 names (``Bindings.replace``), and every
  file imported anew for one check did too (``Bindings.forget``, of a module it never
  watched): the next attempt built the row again and copied every namespace (about half of
  ``grader_determinism``'s time on the τ² suite). The row is kept, its values taken anew;
  what the watch sees is unchanged.
- A grading's setting that failed part way (a context refusing to start) left the ones
  before it in force: the process's time zone at UTC+14.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import groundstate.validation.checks as checks
import groundstate.validation.skew as skew
from groundstate.bindings import HARNESS
from groundstate.spec.suite import Suite, load_suite
from groundstate.validation.checks import validate_task
from groundstate.validation.skew import outside_reads, skewed

from .test_validation_round24 import _copy
from .test_validation_round25 import _suite_code

# --- the order a folder of the suite lists in ------------------------------------------------

LISTINGS = {
    "listdir": "os.listdir(FOLDER)",
    "scandir": "[e.name for e in os.scandir(FOLDER)]",
    "iterdir": "[p.name for p in FOLDER.iterdir()]",
    "path-glob": "[p.name for p in FOLDER.glob('*.json')]",
    "glob": "[os.path.basename(p) for p in glob.glob(str(FOLDER / '*.json'))]",
    "walk": "next(os.walk(FOLDER))[2]",
}

LISTED_CHECK = '''

import glob
import os
from pathlib import Path

FOLDER = Path(__file__).parent / "expected"


def _listed() -> list[str]:
    return {listing}


FIRST = _listed()  # the order the author's machine lists the folder in


def sampled(s0: Any, sT: Any) -> bool:
    """Takes the folder's order for granted (as "the first expected file" would)."""
    return {compare} and money_conserved(s0, sT)[0]
'''


def _listing_suite(tmp_path: Path, listing: str, compare: str) -> Suite:
    root = _copy(tmp_path)
    (root / "expected").mkdir()
    for name in ("a.json", "b.json", "c.json"):
        (root / "expected" / name).write_text("{}\n")
    code = LISTED_CHECK.format(listing=LISTINGS[listing], compare=compare)
    (root / "checks.py").write_text((root / "checks.py").read_text() + code)
    task_file = root / "tasks" / "transfer.yaml"
    task_file.write_text(
        task_file.read_text().replace("checks.py:money_conserved", "checks.py:sampled")
    )
    return load_suite(root)


@pytest.mark.parametrize("listing", sorted(LISTINGS))
def test_a_check_resting_on_a_folders_order_fails(tmp_path: Path, listing: str) -> None:
    suite = _listing_suite(tmp_path, listing, "_listed() == FIRST")
    validity = validate_task(suite, "transfer")
    check = validity.check("grader_determinism")
    assert validity.check("solvable").passed, validity.check("solvable").detail
    assert not check.passed, check.detail
    assert "gradings of one final state disagree" in check.detail
    assert "folders listed in reverse order" in check.detail


@pytest.mark.parametrize("listing", ["listdir", "walk"])
def test_a_check_sorting_a_folders_listing_passes(tmp_path: Path, listing: str) -> None:
    """Control: the same listing sorted does not rest on the file system's order."""
    suite = _listing_suite(tmp_path, listing, "sorted(_listed()) == sorted(FIRST)")
    check = validate_task(suite, "transfer").check("grader_determinism")
    assert check.passed, check.detail


def test_listings_are_reversed_for_the_suites_code_only(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    for name in "abcd":
        (folder / name).write_text("")
    code = "import os\nfrom pathlib import Path\n"
    code += "def names(p): return os.listdir(p)\n"
    code += "def entries(p):\n    with os.scandir(p) as it:\n        return [e.name for e in it]\n"
    code += "def walked(p): return [f for _, _, fs in os.walk(p) for f in fs]\n"
    namespace = _suite_code(tmp_path, code)
    natural = os.listdir(folder)
    real = (os.listdir, os.scandir)
    with skew.listings_reversed([namespace]):
        assert namespace["names"](folder) == natural[::-1]
        assert namespace["entries"](folder) == natural[::-1]
        assert namespace["walked"](folder) == natural[::-1]
        assert os.listdir(folder) == natural  # not the suite's code: as before
        assert [e.name for e in os.scandir(folder)] == natural
    assert namespace["names"](folder) == natural
    assert (os.listdir, os.scandir) == real


def test_a_listing_outside_the_suite_is_still_seen_while_reversed(tmp_path: Path) -> None:
    """The reversing functions are groundstate's code: the watch of reads passes over them
    to the check that listed the folder (it stops at groundstate's code otherwise)."""
    root, outside = tmp_path / "suite", tmp_path / "elsewhere"
    root.mkdir(), outside.mkdir()
    namespace = _suite_code(root, f"import os\ndef listed(): return os.listdir({str(outside)!r})\n")
    found: dict[str, None] = {}
    with outside_reads([namespace], root, found), skew.listings_reversed([namespace]):
        namespace["listed"]()
    assert list(found) == [str(outside.resolve())]


# --- the watch of the harness's code across skewed gradings ------------------------------------


def test_a_skewed_grading_keeps_the_watchs_row_and_what_it_sees(tmp_path: Path) -> None:
    namespace = _suite_code(tmp_path, "import random\ndef draw(): return random.random()\n")
    HARNESS.refresh()
    HARNESS.seal()  # the row built
    row = HARNESS._flat
    assert row is not None
    with skewed(True, [namespace]):
        assert namespace["draw"]() > 0.99
        assert HARNESS.rebound() == []  # the skewed stream is the harness's own while inside
    assert HARNESS._flat is row  # not built again by the next attempt
    assert HARNESS.rebound() == []
    real = random.random
    random.random = lambda: 0.5  # an agent's rebinding: still seen, with the row kept
    try:
        assert HARNESS.rebound() == ["random.random"]
    finally:
        random.random = real
    assert HARNESS.rebound() == []


def test_forgetting_a_module_never_watched_keeps_the_row() -> None:
    HARNESS.refresh()
    HARNESS.seal()
    row = HARNESS._flat
    HARNESS.forget("groundstate_user.checks_fresh_never_imported")
    assert HARNESS._flat is row


# --- a grading's setting failing part way --------------------------------------------------------


def test_a_setting_failing_part_way_puts_back_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = load_suite(_copy(tmp_path))
    zone = os.environ.get("TZ")
    offset = time.timezone

    @contextmanager
    def refused(*_: Any) -> Iterator[None]:
        raise OSError("no network to turn off")
        yield

    monkeypatch.setattr(checks, "offline", refused)
    check = validate_task(suite, "transfer").check("grader_determinism")
    assert not check.passed and "no network to turn off" in check.detail
    assert os.environ.get("TZ") == zone and time.timezone == offset

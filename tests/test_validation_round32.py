"""Thirty-second validation audit: more of the machine read past ``grader_determinism``'s skew,
and an honest warning for a check never seen failing.

- The locale's encoding (``locale.getpreferredencoding()``, ``locale.getencoding()``) and its
  names of days and months (``strftime``'s ``%A``, ``%a``, ``%B``, ``%b``, ``%p``, so
  ``calendar.day_name`` and ``month_name``) were the real ones in every grading, though the
  locale itself (``getlocale``, ``%x``) was skewed: ``day.strftime("%A") == "Saturday"`` agreed
  with itself. They are now the skewed locale's (German, then Japanese).
- A file's time read through ``os.stat(name, dir_fd=folder)`` was never dated (nor its look-up
  watched): ``dir_fd`` is now resolved to the file it names.
- A process a check starts inherited the real environment in every grading
  (``subprocess.run(["sh", "-c", "echo $HOME"])``): one started without an ``env`` of its own
  is given no variable at the low end, the real ones at the high end, with the skewed machine's
  ``HOME`` and ``TMPDIR`` at both.
- ``exercised``'s warning under the default ``exercised_checks: report`` now says the task is
  valid only because of that default, and that a check no replay failed (a Python check
  swallowing its own assertion) proves nothing.
"""

from __future__ import annotations

import calendar
import datetime
import locale
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from groundstate.spec.suite import load_suite
from groundstate.validation import validate_task
from groundstate.validation.skew import skewed

from .test_validation_round24 import _copy
from .test_validation_round25 import _suite_code
from .test_validation_round27 import _determinism, _probing

YEAR = datetime.date.today().year
HOME = os.environ.get("HOME", "")
os.environ.setdefault("GS_ROUND32_SET", "here")  # read by the subprocess cases below

PAST_THE_SKEW = {
    "getpreferredencoding": (
        "import locale",
        f"ok = locale.getpreferredencoding(False) == {locale.getpreferredencoding(False)!r}",
    ),
    "getencoding-bound": (
        "from locale import getencoding",
        f"ok = getencoding() == {locale.getencoding()!r}",
    ),
    "path-read-text": (
        "from pathlib import Path",
        "ok = 'caf\u00e9 cr\u00e8me' in Path(__file__).read_text()  # caf\u00e9 cr\u00e8me",
    ),
    "weekday-name": (
        "import datetime",
        "ok = datetime.date(2001, 2, 3).strftime('%A') == 'Saturday'",
    ),
    "month-abbreviation-format": (
        "from datetime import date",
        "ok = f'{{date(2001, 2, 3):%d %b}}' == '03 Feb'",
    ),
    "calendar-month-name": ("import calendar", "ok = calendar.month_name[2] == 'February'"),
    "time-am-pm": (
        "import time",
        "ok = time.strftime('%p', (2001, 2, 3, 9, 0, 0, 5, 34, 0)) == 'AM'",
    ),
    "stat-dir-fd": (
        "import os, datetime",
        "fd = os.open(os.path.dirname(__file__), os.O_RDONLY)\n"
        "found = os.stat('checks.py', dir_fd=fd)\n"
        "ok = datetime.date.fromtimestamp(found.st_mtime).year == {year}\n"
        "os.close(fd)",
    ),
    "subprocess-variable": (
        "import subprocess, sys",
        "out = subprocess.run([sys.executable, '-c', "
        "'import os; print(os.environ.get(\"GS_ROUND32_SET\"))'], capture_output=True, text=True)\n"
        "ok = out.stdout.strip() == 'here'",
    ),
    "subprocess-home-bound": (
        "from subprocess import check_output",
        "ok = check_output(['sh', '-c', 'echo ~'], text=True).strip() == {home!r}",
    ),
    "os-popen": (
        "import os",
        "with os.popen('echo $HOME') as out:\n    ok = out.read().strip() == {home!r}",
    ),
}
READ = {
    "getpreferredencoding": "locale.getpreferredencoding",
    "getencoding-bound": "locale.getencoding",
    "path-read-text": "the encoding a file is read by when given none (io.text_encoding)",
    "weekday-name": "strftime's names of days, months or %p ('%A')",
    "month-abbreviation-format": "strftime's names of days, months or %p",
    "calendar-month-name": "strftime's names of days, months or %p ('%B')",
    "time-am-pm": "strftime's names of days, months or %p ('%p')",
    "stat-dir-fd": "the time checks.py was last changed",
    "subprocess-variable": "the environment a subprocess inherits",
    "subprocess-home-bound": "the environment a subprocess inherits",
    "os-popen": "the environment a subprocess inherits",
}


@pytest.mark.parametrize("what", sorted(PAST_THE_SKEW))
def test_a_check_reading_past_the_skew_fails(tmp_path: Path, what: str) -> None:
    imports, body = PAST_THE_SKEW[what]
    check = _determinism(_probing(tmp_path, imports, body.format(year=YEAR, home=HOME)))
    assert not check.passed, check.detail
    assert "gradings of one final state disagree: conserved gave pass, " in check.detail
    assert "(the suite's code read " in check.detail and READ[what] in check.detail


def test_a_check_reading_them_harmlessly_passes(tmp_path: Path) -> None:
    """The near miss: an encoding, names and a subprocess read, none deciding the verdict;
    formats without names, a literal ``%%A``, a subprocess given its own environment."""
    body = (
        "ok = bool(locale.getpreferredencoding(False)) and bool(locale.getencoding())\n"
        "day = datetime.date(2001, 2, 3)\n"
        "ok = ok and day.strftime('%Y-%m-%d %H%% %%A') == '2001-02-03 00% %A'\n"
        "ok = ok and f'{{day:%d.%m.%Y}}' == '03.02.2001' and day.isoweekday() == 6\n"
        "ok = ok and len(calendar.day_name[0]) > 0 and len(calendar.month_abbr[2]) > 0\n"
        "fd = os.open(os.path.dirname(__file__), os.O_RDONLY)\n"
        "ok = ok and os.stat('checks.py', dir_fd=fd).st_size > 0\n"
        "os.close(fd)\n"
        "run = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True)\n"
        "ok = ok and run.stdout.strip() == b'42'\n"
        "mine = subprocess.run(['sh', '-c', 'echo $GS_MINE'], env={{'GS_MINE': 'x'}}, "
        "capture_output=True, text=True)\n"
        "ok = ok and mine.stdout.strip() == 'x'\n"
        "ok = ok and 'def probe' in Path(__file__).read_text()\n"
        "ok = ok and 'caf\u00e9' in Path(__file__).read_text(encoding='utf-8')  # caf\u00e9"
    )
    imports = "import calendar, datetime, locale, os, subprocess, sys\nfrom pathlib import Path"
    check = _determinism(_probing(tmp_path, imports, body.format()))
    assert check.passed, check.detail


CODE = """
import datetime, locale, os, subprocess, sys

def named(day):
    return day.strftime('%A %a %B %b %h %p %%A %Y')

def encoding():
    return locale.getpreferredencoding(False)

def child(name):
    return subprocess.run(
        [sys.executable, '-c', f'import os; print(os.environ.get({name!r}))'],
        capture_output=True, text=True,
    ).stdout.strip()
"""


def test_names_encoding_and_children_are_skewed_for_the_suites_code_only(
    tmp_path: Path,
) -> None:
    code = _suite_code(tmp_path, CODE)
    day = datetime.datetime(2001, 2, 3, 15)
    real = (day.strftime("%A %a %B %b %h %p %%A %Y"), locale.getpreferredencoding(False))
    seen = {}
    popen = subprocess.Popen
    for high in (False, True):
        with skewed(high, [code]):
            seen[high] = (code["named"](day), code["encoding"](), code["child"]("HOME"))
            # the harness's own calls see the real machine inside
            assert (
                day.strftime("%A %a %B %b %h %p %%A %Y"),
                locale.getpreferredencoding(False),
            ) == real
            assert time.strftime("%A", day.timetuple()) == "Saturday"
            harness = subprocess.run(
                [sys.executable, "-c", "import os; print(os.environ.get('HOME'))"],
                capture_output=True,
                text=True,
                check=True,
            )
            assert harness.stdout.strip() == HOME
            assert subprocess.Popen is not popen and issubclass(subprocess.Popen, popen)
    assert seen[False] == (
        "Samstag Sa Februar Feb Feb  %A 2001",
        "ISO8859-1",
        "/home/groundstate-low",
    )
    assert seen[True] == (
        "\u571f\u66dc\u65e5 \u571f 2\u6708 2\u6708 2\u6708 \u5348\u5f8c %A 2001",
        "eucJP",
        "/home/groundstate-high",
    )
    # and put back after
    assert code["named"](day) == real[0] and code["encoding"]() == real[1]
    assert code["child"]("GS_ROUND32_SET") == "here"
    assert subprocess.Popen is popen
    assert calendar.month_name[2] == "February"


SWALLOWED = """

def swallowed(s0, sT):
    try:
        assert sT.query("SELECT count(*) FROM transfers")[0][0] == 99
    except AssertionError:
        pass
    return True
"""


@pytest.mark.parametrize("mode", ["report", "required"])
def test_a_check_swallowing_its_assertion_is_named_as_proving_nothing(
    tmp_path: Path, mode: str
) -> None:
    root = _copy(tmp_path)
    (root / "checks.py").write_text((root / "checks.py").read_text() + SWALLOWED)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    task["outcome_assertions"].append({"id": "swallowed", "check": "checks.py:swallowed"})
    task_file.write_text(yaml.safe_dump(task))
    suite_file = root / "suite.yaml"
    suite_file.write_text(
        yaml.safe_dump({**yaml.safe_load(suite_file.read_text()), "exercised_checks": mode})
    )
    validity = validate_task(load_suite(root), "transfer")
    exercised = validity.check("exercised")
    assert "never failed in a replay: outcome:swallowed" in exercised.detail, exercised.detail
    if mode == "report":
        assert validity.valid and exercised.passed
        assert "valid only because exercised_checks is report" in exercised.detail
        assert "catches its own assertion" in exercised.detail
        assert "validate --strict, makes the task invalid" in exercised.detail
    else:
        assert not validity.valid and not exercised.passed

"""Reference agents for the bugfix example suite: rule-based stand-ins for a model.

No model is called. Keyword rules recognise which of the library's known problems an issue
describes; the agent then works the way a coding agent does, through the workspace tools
only: it lists the source, searches for the code, reads the file, edits what it read (as a
whole new file, or as a unified diff through ``apply_patch``: two routes, chosen at random),
runs the visible tests and reports. It never sees the hidden tests or the suite's patches:
the tools cannot reach them, and it does not look.

Mistakes are seeded through ``session.rng`` (never the global ``random``): at each decision
point an agent errs with probability ``fault_rate``.

* ``careful(fault_rate=0.1)``: sometimes applies a plausible fix that passes the visible
  tests but not the whole contract (the kind of fix the suite's ``bad_visible_only`` patches
  are).
* ``hasty(fault_rate=0.35)``: that more often, and it also leaves its reproduction script in
  the repository (a change outside the allowed paths), claims a fix without making it, and
  reports success whatever the tests say. Usage is reported as zero: there is no model.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundstate.agents.base import Session

TEST_COMMAND = "python -m unittest discover -s tests -t ."
SCRATCH = "repro.py"


@dataclass(frozen=True)
class Edit:
    """Replace the one occurrence of ``old`` with ``new`` (the way an editor's replace works);
    with ``regex``, ``old`` is a regular expression (multi-line) matching exactly once."""

    old: str
    new: str
    regex: bool = False

    def apply(self, content: str) -> str | None:
        """The edited content, or None when ``old`` is not there exactly once."""
        pattern = re.compile(self.old if self.regex else re.escape(self.old), re.M)
        edited, count = pattern.subn(lambda _: self.new, content)
        return edited if count == 1 else None


@dataclass(frozen=True)
class Change:
    """Edits to one file, found by searching the files under ``under`` for ``locate``."""

    locate: str
    """A regular expression, as the ``search`` tool takes it."""
    edits: tuple[Edit, ...]
    under: str = "src"


@dataclass(frozen=True)
class Recipe:
    """What the agent knows about one kind of problem: how to spot it in an issue, the fix,
    and a plausible wrong fix it makes by mistake."""

    name: str
    trigger: str
    """A regular expression over the issue text (case-insensitive)."""
    right: tuple[Change, ...]
    wrong: tuple[Change, ...]


def _imports(module: str) -> Edit:
    """Add ``import module`` as the first import after ``from __future__ ...``."""
    future = "from __future__ import annotations\n\n"
    return Edit(future, f"{future}import {module}\n")


def _before_business_days(function: str) -> Edit:
    return Edit("\ndef business_days(", f"\n{function}\n\ndef business_days(")


_UNMARK = Change(  # the issue asks to un-mark the test that shows the bug
    r"@unittest\.expectedFailure",
    (Edit(r"^ *@unittest\.expectedFailure\b.*\n", "", regex=True),),
    "tests",
)
_CUT = "    return text[:width] + ellipsis\n"
_ROUND = "    return round(value * 100)\n"
_SPLIT = "    return [cell.strip() for cell in line.split(delimiter)]\n"
_LINES = "    lines = text.splitlines()\n"
_SLUG = "    return _NOT_SLUG.sub(separator, text.lower()).strip(separator)\n"
_QUOTED = """\
    outside = re.escape(delimiter) + r'(?=(?:[^"]*"[^"]*")*[^"]*$)'
    return [cell.strip().strip('"') for cell in re.split(outside, line)]
"""
_ADD_MONTHS = '''\
def add_months(day: date, months: int) -> date:
    """The same day ``months`` calendar months later, clamped to the end of a shorter month."""
    year, index = divmod(day.year * 12 + day.month - 1 + months, 12)
    last = calendar.monthrange(year, index + 1)[1]
    return date(year, index + 1, min(day.day, last))
'''
_ADD_MONTHS_UNCLAMPED = '''\
def add_months(day: date, months: int) -> date:
    """The same day ``months`` calendar months later."""
    year, index = divmod(day.year * 12 + day.month - 1 + months, 12)
    return day.replace(year=year, month=index + 1)
'''

RECIPES = (
    Recipe(
        "truncate",
        r"\btruncate\b",
        right=(
            Change(
                r"def truncate\(",
                (
                    Edit(
                        _CUT,
                        "    keep = max(width - len(ellipsis), 0)  # the ellipsis counts too\n"
                        "    return (text[:keep] + ellipsis)[:width]\n",
                    ),
                ),
            ),
        ),
        wrong=(
            Change(r"def truncate\(", (Edit(_CUT, "    return text[: width - 1] + ellipsis\n"),)),
        ),
    ),
    Recipe(
        "half-cent rounding",
        r"parse_amount|half a cent",
        right=(
            Change(
                r"def parse_amount\(",
                (
                    _imports("decimal"),
                    Edit(
                        _ROUND,
                        "    exact = decimal.Decimal(cleaned) * 100  # not the float: 1.005 stays\n"
                        "    return int(exact.quantize(1, rounding=decimal.ROUND_HALF_UP))\n",
                    ),
                ),
            ),
            _UNMARK,
        ),
        wrong=(
            Change(
                r"def parse_amount\(",
                (_imports("math"), Edit(_ROUND, "    return math.floor(value * 100 + 0.5)\n")),
            ),
            _UNMARK,
        ),
    ),
    Recipe(
        "empty export",
        r"empty export|empty file|blank lines?",
        right=(
            Change(
                r"def read_items\(",
                (
                    Edit(
                        _LINES,
                        _LINES
                        + "    first = next((i for i, r in enumerate(lines) if r.strip()), -1)\n"
                        "    if first < 0:  # nothing but blank lines\n"
                        "        return []\n",
                    ),
                    Edit("_split_row(lines[0], ", "_split_row(lines[first], "),
                    Edit(
                        "    for number, line in enumerate(lines[1:], start=2):\n",
                        "    for number, line in enumerate(lines[first + 1 :], start=first + 2):\n"
                        "        if not line.strip():\n"
                        "            continue\n",
                    ),
                ),
            ),
        ),
        wrong=(
            Change(
                r"def read_items\(",
                (
                    Edit(
                        _LINES,
                        "    lines = [line for line in text.splitlines() if line.strip()]\n"
                        "    if not lines:\n"
                        "        return []\n",
                    ),
                ),
            ),
        ),
    ),
    Recipe(
        "quoted cells",
        r"quot",
        right=(
            Change(
                r"def _split_row\(",
                (
                    _imports("csv"),
                    Edit(
                        _SPLIT,
                        "    cells = next(csv.reader([line], delimiter=delimiter))\n"
                        "    return [cell.strip() for cell in cells]\n",
                    ),
                ),
            ),
        ),
        wrong=(Change(r"def _split_row\(", (_imports("re"), Edit(_SPLIT, _QUOTED))),),
    ),
    Recipe(
        "shared invoice lines",
        r"leak|other invoice|start empty",
        right=(
            Change(
                r"class Invoice\b",
                (
                    Edit("lines: list[LineItem] = []", "lines: list[LineItem] | None = None"),
                    Edit(
                        "        self.lines = lines\n",
                        "        self.lines = [] if lines is None else list(lines)  # not shared\n",
                    ),
                ),
            ),
        ),
        wrong=(
            Change(
                r"class Invoice\b",
                (
                    Edit(
                        "        self.lines.append(item)\n",
                        "        self.lines = [*self.lines, item]\n",
                    ),
                ),
            ),
        ),
    ),
    Recipe(
        "accented slugs",
        r"slugify|accent",
        right=(
            Change(
                r"def slugify\(",
                (
                    _imports("unicodedata"),
                    Edit(
                        _SLUG,
                        "    parts = unicodedata.normalize('NFKD', text)  # è: e + accent\n"
                        "    plain = ''.join(c for c in parts if not unicodedata.combining(c))\n"
                        "    return _NOT_SLUG.sub(separator, plain.casefold()).strip(separator)\n",
                    ),
                ),
            ),
        ),
        wrong=(Change(r"def slugify\(", (Edit('(r"[^a-z0-9]+")', '(r"[\\W_]+")'),)),),
    ),
    Recipe(
        "add_months",
        r"add_months",
        right=(
            Change(
                r"def business_days\(", (_imports("calendar"), _before_business_days(_ADD_MONTHS))
            ),
        ),
        wrong=(Change(r"def business_days\(", (_before_business_days(_ADD_MONTHS_UNCLAMPED),)),),
    ),
)


def recognise(request: str) -> Recipe | None:
    """The first recipe whose trigger the issue text matches."""
    return next((r for r in RECIPES if re.search(r.trigger, request, re.I)), None)


def unified_diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), f"a/{path}", f"b/{path}"
    )
    return "".join(lines)


def _first_path(search_output: Any) -> str | None:
    """The file of the first ``path:line:text`` match."""
    matches = search_output.get("matches", []) if isinstance(search_output, dict) else []
    return str(matches[0]).split(":", 1)[0] if matches else None


@dataclass(frozen=True)
class BugfixAgent:
    """A rule-based coding agent with seeded faults."""

    fault_rate: float
    hasty: bool

    async def run(self, session: Session) -> str | None:
        session.record_usage(input_tokens=0, output_tokens=0, cost=0.0)
        return await _Attempt(session, self.fault_rate, self.hasty).run()


class _Attempt:
    """One attempt; all its state lives here, so attempts share nothing."""

    def __init__(self, session: Session, fault_rate: float, hasty: bool) -> None:
        self.session, self.fault_rate, self.hasty = session, fault_rate, hasty

    def slip(self) -> bool:
        return self.session.rng.random() < self.fault_rate

    async def call(self, tool: str, **args: Any) -> Any:
        result = await self.session.call(tool, args)
        return result.output if result.ok else None

    async def run(self) -> str:
        recipe = recognise(self.session.user_request)
        await self.call("list_files", path="src")
        if recipe is None:
            return "I could not tell which code this issue is about, so I changed nothing."
        if self.hasty and self.slip():  # fault: claims a fix without making one
            return f"Fixed the {recipe.name} problem; the tests pass."
        if self.hasty and self.slip():  # fault: the reproduction script stays behind
            await self.call("write_file", path=SCRATCH, content=_scratch(recipe))
            await self.call("run_command", command=f"python {SCRATCH}")
        changes = recipe.wrong if self.slip() else recipe.right
        for change in changes:
            if not await self.change(change):
                return f"I could not find the code to change for the {recipe.name} problem."
        outcome = await self.call("run_command", command=TEST_COMMAND, timeout_s=60)
        passed = isinstance(outcome, dict) and outcome.get("exit_code") == 0
        if passed or self.hasty:
            return f"Fixed the {recipe.name} problem; the visible tests pass."
        return f"I changed the code for the {recipe.name} problem, but the visible tests fail."

    async def change(self, change: Change) -> bool:
        """Find the file, read it, edit what was read, and write it back (or patch it)."""
        found = await self.call("search", pattern=change.locate, path=change.under)
        path = _first_path(found)
        if path is None:
            return False
        read = await self.call("read_file", path=path)
        old = read.get("content") if isinstance(read, dict) else None
        if not isinstance(old, str):
            return False
        new: str | None = old
        for edit in change.edits:
            new = edit.apply(new) if new is not None else None
        if new is None:
            return False
        if self.session.rng.random() < 0.5:  # two valid routes; take either
            patched = await self.call("apply_patch", patch=unified_diff(path, old, new))
            if patched is not None:
                return True
        written = await self.call("write_file", path=path, content=new)
        return written is not None


def _scratch(recipe: Recipe) -> str:
    return (
        "import sys\n\n"
        'sys.path.insert(0, "src")\n'
        f"print('reproducing the {recipe.name} problem')\n"
        "import tally  # noqa: E402\n\n"
        "print(tally.__version__)\n"
    )


def careful(fault_rate: float = 0.1) -> BugfixAgent:
    """A careful agent: the right fix, except for a rare plausible-but-wrong one."""
    return BugfixAgent(fault_rate=fault_rate, hasty=False)


def hasty(fault_rate: float = 0.35) -> BugfixAgent:
    """A hasty agent: frequent wrong fixes, leftover scripts, and claims without acting."""
    return BugfixAgent(fault_rate=fault_rate, hasty=True)

"""How the terminal and HTML reports print a number (and bound a text), so the two agree with
each other."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groundstate.rounding import SMALLEST_P, counted, decimals, rounded, significant

TEXT_LIMIT = 20_000
"""Characters of one shown value (a message, a tool output, an error, an evidence blob, a
joined list) before it is cut: a record or an imported file may hold megabytes in any text."""
LINE_LIMIT = 2_000
"""Characters of a one-line value in the terminal (a task id, a reason, a slice, a note)."""


def clipped(text: str, limit: int = TEXT_LIMIT) -> str:
    """*text*, cut after *limit* characters with how many more there were: every view prints
    values from records and files through it (the JSON keeps them whole)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\u2026 ({len(text) - limit} more characters)"


def fixed(value: float, digits: int) -> str:
    """*digits* fixed decimals, but in exponent form past a trillion (a 1e308 cost would
    otherwise print 309 digits)."""
    return decimals(value, digits) if abs(value) < 1e12 else significant(value, digits)


def amount(value: float, digits: int) -> str:
    """A cost or latency: :func:`fixed`, but in exponent form where fixed decimals would
    print a value that is not 0 as 0 (a cost of 0.00004 per attempt is not free)."""
    text = fixed(value, digits)
    return significant(value, digits) if value and not float(text) else text


def weight(value: float) -> str:
    """A task weight: two decimals where they are the weight, else every digit it has (a
    weight of 0.125 printed as "0.12" disagreed with the JSON and with the suite values it
    weighs)."""
    text = f"{value:.2f}"
    return text if float(text) == value else repr(value)


APART = "failed validation: in no figure"
"""How a per-task table marks a task that failed validation and ran anyway (``run
--allow-invalid``): its row is listed, but none of its attempts is in any figure."""


def counted_of(tasks: int, excluded: int) -> str:
    """A slice's tasks as its figures count them: ``"1 of 2"`` when some of its tasks have no
    counted attempt in the view (a bare 2 beside a rate over 1 task misstates its
    denominator)."""
    return str(tasks) if not excluded else f"{tasks - excluded} of {tasks}"


def fraction(value: float, digits: int = 3) -> str:
    """A probability or rate with three decimals (or *digits*), except that a value strictly
    between 0 and 1 never prints as 0.000 or 1.000: one success in 3,000 attempts is not a
    success rate of 0.000, nor is a pass@k of 0.9996 certain (``<0.001``, ``>0.999``; the JSON
    keeps it). Rounded half away from zero (:func:`~groundstate.rounding.rounded`): 9/16 is
    0.563."""
    text = decimals(value, digits)
    if value > 0 and float(text) == 0:
        return f"<{decimals(10**-digits, digits)}"
    if value < 1 and float(text) == 1:
        return f">{decimals(1 - 10**-digits, digits)}"
    return text


def share(value: float, digits: int = 1) -> str:
    """A share as a percentage with one decimal (or *digits*); as :func:`fraction`, never 0.0%
    or 100.0% for a share that is neither (one invalid try in 3,000 is not none, nor a
    mutation score of 0.996 all: ``>99%`` with no decimal)."""
    text = decimals(value, digits, percent=True)
    if value > 0 and float(text[:-1]) == 0:
        return f"<{decimals(10 ** -(digits + 2), digits, percent=True)}"
    if value < 1 and float(text[:-1]) == 100:
        return f">{decimals(1 - 10 ** -(digits + 2), digits, percent=True)}"
    return text


def declared_share(value: float) -> str:
    """A declared bound (a threshold from a file or an option) as a percentage with one
    decimal, or as many more as it takes to print it exactly (up to 12): the threshold
    0.0125 is "1.25%", not "1.2%" (Python's half-even) nor "1.3%" beside a flagged
    "1.26%"."""
    for digits in range(1, 13):
        if rounded(value, digits + 2) == value:
            return decimals(value, digits, percent=True)
    return share(value)


def given(value: float) -> str:
    """An option's value echoed as it was given: the fewest significant digits (rounded as
    :func:`~groundstate.rounding.rounded`) that are the value, so a --delta of 0.1234567 is
    not echoed as Python's ``:g`` "0.123457"."""
    for digits in range(1, 16):
        text = significant(value, digits)
        if float(text) == value:
            return text
    return repr(value)


def share_apart(value: float, bound: float) -> str:
    """A share as :func:`share` prints it, with as many more decimals as keep it apart from
    *bound* where it would print as *bound* (10.04% of tries flagged beyond 10% is "10.04%");
    one invalid try in 3,000 is "<0.1%", never "0.0%", nor 2,999 in 3,000 "100.0%"."""
    text = share(value)
    if text != share(bound):
        return text
    return apart(value, bound, 1, percent=True)


def apart(value: float, bound: float, digits: int, *, percent: bool = False, sign: str = "") -> str:
    """*value* with *digits* decimals (a percentage with *percent*), or as many more as it
    takes to print it apart from *bound*, on its own side: a failed gate of 0.949749 against
    0.95 is "0.9497", not "0.950 is below 0.95"; 10.04% of tries flagged for exceeding 10% is
    "10.04%", not "10.0%". A value no decimals tell apart from *bound* but not equal to it
    is marked with its side: the unpaired p-value kept just below 0.05 (the float before
    0.05) beside an interval that excludes 0 is "<0.050", not "0.050"."""
    for more in range(digits, 17):
        text = decimals(value, more, sign=sign, percent=percent)
        other = decimals(bound, more, sign=sign, percent=percent)
        if float(text.rstrip("%")) != float(other.rstrip("%")):  # "-0.000" is "+0.000"
            return text
    text = decimals(value, digits, sign=sign, percent=percent)
    return text if value == bound else f"{'<' if value < bound else '>'}{text}"


NOISE = 1e-12
"""A difference closer to 0 than this is float noise (a batch compared with itself)."""


def signed(value: float) -> str:
    """A difference or an interval bound with its sign and three decimals; one that is not 0
    never prints as 0 (``[+0.0004, +0.020]`` excludes 0, ``[+0.000, +0.020]`` seems to touch
    it)."""
    return f"{0.0:+.3f}" if abs(value) < NOISE else apart(value, 0.0, 3, sign="+")


def interval(low: float, high: float, *, difference: bool = False) -> str:
    """An interval ``[low, high]`` as every report prints it: three decimals (differences
    signed), its lower end rounded down and its upper end up (so the printed interval holds
    the computed one and the printed estimate), or as many more decimals as it takes for the
    two ends to print apart and for an end that is not at an end of the range (nor, for a
    difference, 0) to print as neither. With three decimals alone a partial score's interval
    [0.49999, 0.50011] printed as the zero-width "[0.500, 0.500]", and [0.99987, 1] beside an
    estimate of ">0.999" as "[1.000, 1.000]"; rounded to nearest, [0.6926, 0.8] printed
    "[0.693, 0.800]", narrower than computed."""
    marks = (-1.0, 0.0, 1.0) if difference else (0.0, 1.0)
    sign = "+" if difference else ""
    for digits in range(3, 17):
        texts = [
            _kept(value, marks, digits, sign, toward)
            for value, toward in ((low, "down"), (high, "up"))
        ]
        if float(texts[0]) != float(texts[1]):
            break
    return f"[{texts[0]}, {texts[1]}]"


def _kept(value: float, marks: tuple[float, ...], digits: int, sign: str, toward: str) -> str:
    """*value* with *digits* decimals or more, rounded *toward* ``"down"`` or ``"up"``, never
    printed as one of *marks* it is not (within float noise of a mark, it is that mark: no
    "-0.000")."""
    for mark in marks:
        if abs(value - mark) < NOISE:
            return f"{mark:{sign}.{digits}f}"
    for more in range(digits, 17):
        text = decimals(value, more, sign=sign, toward=toward)
        if float(text) not in marks:
            break
    return text


def p_value(value: float, alpha: float) -> str:
    """A p-value as the terminal and HTML reports both print it: two significant digits below
    0.001 (the HTML printed 0.0004 as 0.000), else three decimals, or as many more as keep it
    apart from *alpha* (0.0495 is not "0.050" beside an interval that excludes 0); below
    0.001 with more significant digits likewise (a q-value of 0.000496 at ``--fdr 0.0005``
    is not "0.0005"). A p-value at :data:`~groundstate.rounding.SMALLEST_P` (one that
    underflowed, given as that floor) is ``<1e-300``, never "0" nor a value it is not."""
    if value <= SMALLEST_P:
        return f"<{SMALLEST_P:g}"
    if value >= 0.001:
        return apart(value, alpha, 3)
    for digits in range(2, 17):
        if significant(value, digits) != significant(alpha, digits):
            break
    return significant(value, digits)


NO_VALID_FIGURE = (
    "no figure: a batch has no valid attempt (the view below counts its invalid attempts as "
    "failures)"
)
"""What a comparison prints for its valid view when a batch has no valid attempt: the
terminal and HTML pages left the view out without a word, showing the strict view alone."""


def incomplete_text(missing: dict[str, Any]) -> str:
    """What :func:`groundstate.analysis.missing_attempts` found, as one phrase (every report
    words it alike)."""
    absent, pending = missing["tasks_without_any"], missing["reruns_pending"]
    parts = []
    if missing["count"]:
        left_out = f" (tasks with none, left out of every number: {', '.join(absent)})"
        parts.append(
            f"{missing['count']} of {counted(missing['planned'], 'planned attempt')} "
            f"{'is' if missing['count'] == 1 else 'are'} not stored" + (left_out if absent else "")
        )
    if pending:
        plural = pending != 1
        parts.append(
            f"{pending} invalid attempt{'s' * plural} still {'have' if plural else 'has'} "
            "reruns due under the batch's policy (counted as invalid until resumed)"
        )
    return "; ".join(parts)


def flagged_text(tries: Mapping[str, Any]) -> str:
    """The invalid-try flag of :func:`groundstate.analysis.tries`, as one phrase ("" when not
    flagged): every report words it alike."""
    if not tries["flagged"]:
        return ""
    invalid, threshold = tries["invalid_tries"] / tries["tries"], tries["max_invalid_rate"]
    return (
        f"invalid tries exceed the batch's declared threshold ({tries['invalid_tries']} of "
        f"{tries['tries']}: {share_apart(invalid, threshold)} > {declared_share(threshold)})"
    )


def denominators_text(
    valid: int, invalid: int, tries: dict[str, Any], *, tasks: tuple[int, int] | None = None
) -> str:
    """A batch's counted attempts and its tries, reruns included, as one phrase ("" when no
    try is invalid): ``34 valid and 20 invalid attempts counted; 54 tries in all, 20
    invalid (37.0%)``. With *tasks* (those counted, of the batch's), over some of its tasks
    only (``compare`` on the tasks it compared): ``on 5 of its 7 tasks (those compared): ...``."""
    if not tries["invalid_tries"]:
        return ""
    rate = share(tries["invalid_tries"] / tries["tries"])
    return (
        (_compared(tasks) if tasks else "")
        + f"{valid} valid and {counted(invalid, 'invalid attempt')} counted; "
        f"{counted(tries['tries'], 'try', 'tries')} in all, {tries['invalid_tries']} invalid "
        f"({rate})"
    )


def _compared(tasks: tuple[int, int]) -> str:
    """``on 5 of its 7 tasks (those compared): ``"""
    return f"on {tasks[0]} of its {counted(tasks[1], 'task')} (those compared): "


def outside_plan_text(outside: int) -> str:
    """The tries stored outside the batch's plan (:func:`groundstate.analysis.planned`), as
    one phrase; "" when none (every report words it alike)."""
    if not outside:
        return ""
    tries = "1 stored try is" if outside == 1 else f"{outside} stored tries are"
    return (
        f"{tries} outside the batch's plan (added by hand or by another program) and left out "
        "of every figure; groundstate verify names each"
    )


def invalid_task_text(rows: list[dict[str, Any]]) -> str:
    """The results of tasks that failed validation, as reported apart from the figures:
    ``transfer 3/4 valid attempts succeeded, 1 invalid``."""
    return "; ".join(
        f"{t['task_id']} {t['valid']['c']}/{t['valid']['n']} valid attempts succeeded"
        + (f", {t['invalid']} invalid" if t["invalid"] else "")
        for t in rows
    )


NAMED = 8
"""Tasks a report's line names before it says "and N more" (``--json`` lists every one)."""


def named(counts: dict[str, int]) -> str:
    """``t1 (2), t2 (1)``: the first :data:`NAMED` tasks with their counts, then how many more."""
    shown = ", ".join(f"{task} ({n})" for task, n in list(counts.items())[:NAMED])
    return shown + (f" and {len(counts) - NAMED} more" if len(counts) > NAMED else "")


def judge_error_text(block: dict[str, Any], *, tasks: tuple[int, int] | None = None) -> str:
    """What :func:`groundstate.analysis.judge_errors` found, as one phrase ("" when none):
    every report words it alike. With *tasks*, over some of the batch's tasks only, as
    :func:`denominators_text` says it."""
    if not block["attempts"]:
        return ""
    attempts, of = block["attempts"], block["counted_attempts"]
    return (
        (_compared(tasks) if tasks else "")
        + f"{attempts} of {counted(of, 'counted attempt')} had a judge that could not judge "
        f"({block['errors']} judge error{'s' * (block['errors'] != 1)}): their judged "
        "verdicts are unknown, their success rests on state and constraints alone, and their "
        "partial scores are left out where the rubric counts the judge; attempts by task: "
        f"{named(block['by_task'])}"
    )


def served_texts(served: list[dict[str, Any]]) -> tuple[str, str]:
    """What :func:`groundstate.served.served_in_batch` found, as two phrases ("" when none):
    the models that answered for another (``'gpt-4o-mini' for 'gpt-4o'``), and the model
    requested under another spelling (``'gpt-4o-2024-08-06' for 'gpt-4o' (snapshot
    2024-08-06)``), each with its answers and tries, the first :data:`NAMED` of each."""
    texts = []
    for differs in (True, False):
        entries = [e for e in served if e["differs"] is differs and e["served"] != e["requested"]]
        shown = ", ".join(_served_entry(e) for e in entries[:NAMED])
        more = f" and {len(entries) - NAMED} more" if len(entries) > NAMED else ""
        texts.append(shown + more)
    return texts[0], texts[1]


SPELLINGS = ("snapshot", "revision", "prefix", "host", "version", "reordered", "deployment")
"""How a served name spells the model requested (:func:`groundstate.served.same_model`)."""


def _served_entry(entry: dict[str, Any]) -> str:
    """``'gpt-4o-mini' for 'gpt-4o' (12 answers in 3 tries)``, with how it was spelled."""
    spelled = [f"{kind} {entry[kind]}" for kind in SPELLINGS if kind in entry]
    counts = f"{counted(entry['answers'], 'answer')} in {counted(entry['tries'], 'try', 'tries')}"
    return f"{entry['served']!r} for {entry['requested']!r} ({'; '.join([*spelled, counts])})"


def session_text(block: dict[str, Any]) -> str:
    """How the batch ran, from :func:`groundstate.analysis.provenance` ("" for a batch run in
    one session, or whose sessions were not recorded): where it started and each resume, with
    the executor, concurrency and tries of each, so a mixed batch says so."""
    sessions, unrecorded = block["sessions"], block["unrecorded"]
    if len(sessions) + bool(unrecorded) < 2:
        return ""
    first, *resumes = (
        [f"{unrecorded['executor'] or 'an executor not recorded'} ({_tries(unrecorded)}; "
         "its session was not recorded)"] if unrecorded else []
    ) + [
        f"{s['executor']} (concurrency {s['concurrency']}, pid {s['pid']} on {s['host']}: "
        f"{_tries(s)}"
        + (f", {s['reruns']} rerun{'s' * (s['reruns'] != 1)}" if s["reruns"] else "")
        + ")"
        for s in sessions
    ]  # fmt: skip
    mixed = " on another executor" if len(block["executors"]) > 1 else ""
    times = f"{len(resumes)} time{'s' * (len(resumes) != 1)}"
    return f"started on {first}; resumed {times}{mixed}: on {'; on '.join(resumes)}"


def _tries(counted: dict[str, Any]) -> str:
    return f"{counted['tries']} tr{'ies' if counted['tries'] != 1 else 'y'}"


def validation_text(block: dict[str, Any]) -> str:
    """What :func:`groundstate.analysis.provenance` found wrong with the proof of the batch's
    tasks, as one phrase ("" when every session proved them under the current validator, or
    no session was recorded)."""
    sessions = block["sessions"]
    unproven = [str(s["number"]) for s in sessions if s["validator_revision"] is None]
    parts = []
    if unproven:
        alone = len(sessions) == 1 and not block["unrecorded"]
        sessions_named = f"session{'s' * (len(unproven) > 1)} {', '.join(unproven)}"
        which = "its only session" if alone else sessions_named
        parts.append(
            f"{which} ran tasks never proven valid (run through the library without "
            "validation): a task that cannot be solved, or that doing nothing passes, counts "
            "like any other"
        )
    if block["stale_validation"]:
        older = ", ".join(map(str, block["validator_revisions"]))
        parts.append(
            f"its tasks were proven under validator revision {older}, older than the current "
            f"{block['current_validator_revision']}: the verdicts may not hold under today's "
            "checks (`groundstate validate` proves them again)"
        )
    return "; ".join(parts)

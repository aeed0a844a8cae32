"""The constraint engine under adversarial length, fifty-sixth round: a message of one short
piece repeated to 99,000 characters must be read far within a check's deadline.

- A long text was searched for each top-level alternative of a ``matches`` pattern in turn
  (``_match.found_in``): the default ``no`` of ``confirmed`` has 74, most with no literal
  prefix, so each was tried at every position of the text. A user's message of "1." repeated
  took ``cancel_reason_as_said`` (and every ``confirmed`` constraint) about 1 s of CPU, ", ",
  "ok ", a zero-width space, a tab some 0.5 to 0.7 s. Each alternative is now known by the
  words one of which its every match holds (read from the parsed pattern: literal runs,
  choices, classes, repeats that must occur); one whose words the text lacks is not searched
  (a scan for a word in C, not the engine at every position). The same pieces take some
  0.02 s now; the verdicts are those of the search itself (checked here on random texts
  of the pattern's words, the characters a search ignoring case takes for ASCII letters
  among them).
- The pieces not tried before ("1.", "ok ", "no, ", "not ", "don't ", a zero-width space, a
  combining accent, an emoji, a right-to-left mark, "\\r\\n", a tab, one word or number of
  99,000 characters) as a user's message or the final reply of a task whose cancellations a
  yes confirms: every constraint and check together within the round's generous bound."""

from __future__ import annotations

import random
import re
import string
import time

import pytest

from groundstate.grading.constraints import _match
from groundstate.grading.constraints._match import found_in
from groundstate.spec.constraints import JOKING_PATTERN, NO_PATTERN, TERMS_PATTERN
from groundstate.spec.suite import Suite
from groundstate.trace import AgentEvent

from .test_constraints_round12 import _final, oracles, retail
from .test_slowreads_round54 import CHECKS, _cpu_bound, _OverBound, _repeated
from .test_slowreads_round55 import _as_user, _task_graded_in_time

__all__ = ["oracles", "retail"]  # the fixtures, shared with the twelfth round's tests

DEFAULT_NO = re.compile(NO_PATTERN, re.IGNORECASE)
NEW_PIECES = {
    "1.": False,
    "ok ": False,
    "no, ": True,
    "don't ": True,
    "not ": True,
    "\u200b": False,  # a zero-width space
    "e\u0301": False,  # a combining accent
    "\U0001f600": False,
    "\u200f": False,  # a right-to-left mark
    "\r\n": False,
    "\t": False,
    "a": False,
    "1": False,
    ", ": False,
    "| ": False,
    "Yes, ": False,
    "$1, ": False,
    "\n- ": False,
    '{"': False,
    "(": False,
    "**": False,
}
"""Pieces repeated to 99,000 characters, and whether the default ``no`` finds a match in them
(as ``DEFAULT_NO.search`` says)."""


# --- 1. a long text is searched only for the alternatives whose words it holds ---------------


def test_the_default_no_reads_every_long_piece_in_time() -> None:
    found_in(DEFAULT_NO, _repeated("1.", 5_000))  # its alternatives worked out once a process
    verdicts: dict[str, bool] = {}
    try:
        with _cpu_bound(4.0):  # all together: some 0.5 s now, 10 s and more before
            for piece in NEW_PIECES:
                verdicts[piece] = found_in(DEFAULT_NO, _repeated(piece))
    except _OverBound:
        pytest.fail(f"the default no read {len(verdicts)} of {len(NEW_PIECES)} in 4 s of CPU")
    assert verdicts == NEW_PIECES


def test_cancel_reason_as_said_reads_a_long_user_message_in_time(
    retail: Suite, oracles: dict[str, list[AgentEvent]]
) -> None:
    # several-changes's cancellations are confirmed by a user's yes: every user message is
    # searched for the default no (1 s of CPU for "1." before, 0.5 to 0.7 s for the others)
    events = oracles["several-changes"]
    assert CHECKS.cancel_reason_as_said(_as_user(events, _repeated("1.", 5_000)), None)[0]
    started = time.process_time()
    for piece in ["1.", ", ", "ok ", "\u200b", "\t", "e\u0301"]:
        passed, evidence = CHECKS.cancel_reason_as_said(_as_user(events, _repeated(piece)), None)
        assert passed, evidence
    assert time.process_time() - started < 1.5


@pytest.mark.parametrize(
    ("piece", "place"),
    [
        ("1.", "final"),
        ("no, ", "final"),
        ("1", "final"),
        ("\U0001f600", "final"),
        ("1.", "user"),
        ("not ", "user"),
        ("\U0001f600", "user"),
        ("ok ", "user"),
    ],
)
def test_a_task_confirmed_by_a_yes_grades_new_pieces_in_time(
    retail: Suite, oracles: dict[str, list[AgentEvent]], piece: str, place: str
) -> None:
    # every constraint and check of several-changes together: 0.1 to 2.1 s of CPU measured
    events = oracles["several-changes"]
    text = _repeated(piece)
    changed = _as_user(events, text) if place == "user" else _final(events, f"Sorry.\n{text}")
    _task_graded_in_time(retail, "several-changes", changed)


# --- 2. the same verdicts as the search ------------------------------------------------------

CASELESS_LOOKALIKES = {"i": ["\u0130", "\u0131"], "s": ["\u017f"], "k": ["\u212a"]}
"""Characters beyond ASCII a search ignoring case takes for an ASCII letter."""


def _words(pattern: str) -> list[str]:
    """The words the alternatives of *pattern* need, and each of their words alone."""
    words: set[str] = set()
    for _part, needs in _match._alternatives_needing(pattern, re.IGNORECASE):
        words |= needs | {w for need in needs for w in need.split()}
    return sorted(words)


def _lookalike(word: str, rng: random.Random) -> str:
    """*word* with its letters in another case, or as a look-alike a search takes for it."""
    return "".join(
        rng.choice([c, c.upper(), *CASELESS_LOOKALIKES.get(c.lower(), [])]) for c in word
    )


def _random_text(rng: random.Random, words: list[str]) -> str:
    """Over SEARCHED_CHARS characters of one piece repeated, a few words put in."""
    piece = rng.choice([*NEW_PIECES, " ", "x ", "wai", "no", "yes ", "? "])
    body = [piece * rng.randint(1, 60) for _ in range(12)]
    for _ in range(rng.randint(0, 4)):
        word = _lookalike(rng.choice(words), rng)
        body.insert(rng.randrange(len(body) + 1), word + rng.choice(["", " ", ", ", "? ", ". "]))
    text = "".join(body)
    return (text * (_match.SEARCHED_CHARS // max(1, len(text)) + 1))[: rng.randint(4_200, 5_000)]


@pytest.mark.parametrize("pattern", [NO_PATTERN, TERMS_PATTERN, JOKING_PATTERN])
def test_no_alternative_is_passed_over_where_it_matches(pattern: str) -> None:
    rng, words = random.Random(56), _words(pattern)
    matched = 0
    for _ in range(40):
        text = _random_text(rng, words)
        held = _match._Held(text, re.IGNORECASE)
        for part, needs in _match._alternatives_needing(pattern, re.IGNORECASE):
            if part.search(text) is not None:
                matched += 1
                assert held.any_of(needs), (part.pattern[:80], sorted(needs), text[:200])
    assert matched > 3  # the texts hold matches, not only misses


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        (r"\bwhen pigs fly\b", "WHEN PİGS FLY", True),
        (r"\bstop\b", "\u017ftop", True),
        (r"kidding", "\u212aidding", True),
        (r"\bwait\b", "wa\u0131t", True),
        (r"(?-i:Zed)|qq", "zed", False),
        (r"(?-i:Zed)|qq", "Zed", True),
        (r"(?i:zed)|qq", "ZED", True),
        (r"x[^a]y", "xby", True),
        (r"x[a-z]{2,}y", "xBCy", True),
        (r"(ab|)c", "c", True),
        (r"k*z", "z", True),
        (r"(?<!not )\bok\b", "not ok", False),
        (r"いいえ|\U0001f44e", "\U0001f44e", True),
        (r"caf[ée]", "CAFÉ", True),
    ],
)
def test_a_long_text_is_read_as_the_search_reads_it(pattern: str, text: str, found: bool) -> None:
    for flags in (re.IGNORECASE, 0):
        compiled = re.compile(pattern, flags)
        for long in (f"{_repeated('1. ', 5_000)} {text}", f"{text} {_repeated('ok ', 5_000)}"):
            assert found_in(compiled, long) == (compiled.search(long) is not None)
    caseless = re.compile(pattern, re.IGNORECASE)
    assert found_in(caseless, f"{_repeated('1. ', 5_000)} {text}") == found


def test_every_character_a_caseless_search_takes_for_ascii_is_folded() -> None:
    ascii_class = re.compile(f"[{re.escape(string.printable[:95])}]", re.IGNORECASE)
    found = {c: chr(c) for c in range(128, 0x110000) if ascii_class.fullmatch(chr(c))}
    assert set(found) == set(_match._CASELESS_ASCII)
    for code, char in found.items():
        assert re.fullmatch(_match._CASELESS_ASCII[code], char, re.IGNORECASE)


@pytest.mark.parametrize(
    ("pattern", "needs"),
    [
        (r"\bwhen pigs fly\b", {"when pigs fly"}),
        (r"\b(i'd|i would) (hate|loathe) (that|it)\b", {"hate", "loathe"}),
        (r"yes+", {"ye"}),
        (r"(ab|)c", {"c"}),
        (r"x*|y", set()),
        (r"[^a]b?", set()),
        (r"(?=abc)", set()),
        (r"(?-i:Zed)", set()),
        (r"caf[ée]s", {"caf"}),
        (r"[a-c]{1,3}", {"a", "b", "c"}),
        (r"[\w]z", {"z"}),
    ],
)
def test_the_words_an_alternative_needs(pattern: str, needs: set[str]) -> None:
    assert _match._needed(pattern, re.IGNORECASE) == needs

"""The retail suite's record naming (only_known_records): the prefix-tree pattern finds exactly
what one alternative per name, longest first, finds."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.tools import load_module

CHECKS = load_module(Path(__file__).parent.parent / "examples" / "retail" / "checks.py", "checks")
# Few letters, both cases, the separators the boundaries care about: names that share prefixes,
# differ only in case, or fit inside one another at one place ("ab" and "AB c").
CHARS = "aAbB1- ."
names_st = st.frozensets(st.text(CHARS, min_size=1, max_size=5), max_size=8)


def _longest_first(names: frozenset[str]) -> re.Pattern[str]:
    options = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{options})(?![\w-])", re.IGNORECASE)


def _found(pattern: re.Pattern[str], text: str) -> list[tuple[int, str]]:
    return [(m.start(), m.group()) for m in pattern.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(names=names_st, words=st.lists(st.text(CHARS, max_size=6), max_size=6))
def test_the_prefix_tree_finds_what_longest_first_finds(
    names: frozenset[str], words: list[str]
) -> None:
    text = " ".join(words + sorted(names))  # each name at least once, among near misses
    assert _found(CHECKS._naming(names), text) == _found(_longest_first(names), text)


def test_the_longest_whole_name_wins_where_a_shorter_one_fits_too() -> None:
    names = frozenset({"ab", "AB c", "O-1001", "O-10011"})
    found = CHECKS._naming(names).findall("ab c, O-10011 and O-1001x and ab")
    assert found == ["ab c", "O-10011", "ab"]


def test_non_ascii_names_keep_one_alternative_each() -> None:
    names = frozenset({"Straße", "STRASSE", "Café"})
    text = "straße café strasse"
    assert _found(CHECKS._naming(names), text) == _found(_longest_first(names), text)

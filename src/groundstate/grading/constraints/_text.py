"""Normalised text, so that message checks see through case, spacing and digit grouping."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

_SPACES = re.compile(r"\s+")
# Between two digits, a run of spaces, hyphens or dashes (U+2010..U+2015, U+2212) or slashes
# is grouping, not content: "4111 1111-1111 1111" and "4111111111111111" are the same number.
_DIGIT_SEPARATORS = re.compile(r"(?<=\d)[ /\-\u2010-\u2015\u2212]+(?=\d)")
_APOSTROPHES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'"})


@lru_cache(maxsize=4096)
def normalise(text: str) -> str:
    """The form message checks compare: the same for text and for the value searched for.

    NFKC, then casefold; invisible format characters (zero-width spaces, soft hyphens) are
    dropped and typographic apostrophes become ``'``; every run of whitespace becomes one space,
    leading and trailing space is stripped; and separators standing between two digits (runs of
    spaces, hyphens, dashes and slashes) are removed. So ``"Card 4111 1111-1111 1111"`` becomes
    ``"card 4111111111111111"``. Dots and commas are kept: ``35.00`` stays ``35.00``.
    """
    text = unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    text = _SPACES.sub(" ", text).strip()
    return _DIGIT_SEPARATORS.sub("", text)


def rendered(value: Any) -> list[str]:
    """The strings a value is named by: a scalar by ``str()``, a list by each element.

    ``None`` names nothing (an absent optional value has nothing to mention). Compare them
    with :func:`mentions`, which normalises both sides.
    """
    if isinstance(value, list):
        return [text for element in value for text in rendered(element)]
    if value is None:
        return []
    return [str(value)]


def mentions(normalised_text: str, value: str) -> bool:
    """Whether already normalised text names *value*: a normalised substring that does not run
    on into letters or digits (``I-1019-1`` is not named by ``I-1019-12``, nor size ``9`` by
    ``$29.00``)."""
    return _named_by(value).search(normalised_text) is not None


@lru_cache(maxsize=4096)
def _named_by(value: str) -> re.Pattern[str]:
    """The pattern :func:`mentions` searches for *value*, made once per value (a confirmation
    tests each value of a change against every question before it)."""
    needle = normalise(value)
    start = r"(?<![^\W_])" if needle[:1].isalnum() else ""
    end = r"(?![^\W_])" if needle[-1:].isalnum() else ""
    return re.compile(start + re.escape(needle) + end)


def search(pattern: str, text: str) -> bool:
    """A ``matches`` condition: the pattern, case-insensitive, somewhere in normalised text."""
    return re.search(pattern, text, re.IGNORECASE) is not None

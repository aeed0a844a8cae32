"""Characters drawn alike: the one table of them, and the skeleton of a name read by eye.

:data:`FOLDED` maps what a reader cannot tell from a Latin letter, an ASCII hyphen or an
apostrophe onto it: the Cyrillic and Greek letters drawn like Latin ones (Cyrillic a U+0430
and ``a``, Greek omicron U+03BF and ``o``, Cyrillic en U+041D and ``H``), typographic
apostrophes, and hyphens (a non-breaking hyphen, a minus sign). Fullwidth letters and digits
(U+FF41, U+FF11), ligatures and mathematical letters need no entry: Unicode's NFKC form
already writes them as ASCII. It is a small table of the common cases, not Unicode's
confusables list (UTS #39, thousands of pairs, many between two non-Latin scripts). Latin
letters and digits that look alike (``l``, ``1``, ``I``; ``O`` and ``0``) are not folded, as
ids such as ``l1`` and ``11`` are honestly two. Message checks
(:func:`groundstate.grading.constraints.fold`) read text through it, and imports
(:func:`skeleton`) compare task ids through it.
"""

from __future__ import annotations

import re
import unicodedata

_CONFUSABLE = (
    # Cyrillic and Greek letters drawn like Latin ones, each before its Latin letter: a
    # Cyrillic o in "No" still reads as "no".
    "\u0410A\u0412B\u0415E\u041aK\u041cM\u041dH\u041eO\u0420P"
    "\u0421C\u0422T\u0425X\u0423Y\u0405S\u0406I\u0408J\u0430a"
    "\u0435e\u043eo\u0440p\u0441c\u0443y\u0445x\u0455s\u0456i"
    "\u0458j\u04bbh\u0501d\u04cfl\u051bq\u051dw"
    "\u0391A\u0392B\u0395E\u0396Z\u0397H\u0399I\u039aK\u039cM"
    "\u039dN\u039fO\u03a1P\u03a4T\u03a5Y\u03a7X\u03bfo\u03b9i"
    "\u03bdv\u03c1p"
    "\u0131i\u0130I"  # a dotless i, a dotted capital I
)
FOLDED = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u02bc": "'",
        # every hyphen is the ASCII one: "I-1019" with a non-breaking hyphen (as models often
        # write it) is "I-1019"; so is a minus sign. Dashes (en, em) are punctuation and stay.
        **dict.fromkeys("\u2010\u2011\u2012\u2212", "-"),
        **{_CONFUSABLE[i]: _CONFUSABLE[i + 1] for i in range(0, len(_CONFUSABLE), 2)},
    }
)
"""Look-alike characters -> the ASCII one each is read as (``str.translate`` table)."""
_NON_ASCII_DIGIT = re.compile(r"(?![0-9])\d")


def skeleton(name: str) -> str:
    """*name* (a task id) as a reader sees it, so that two names with one skeleton are read as
    one: NFKC (a fullwidth t, ``é`` as one character or as ``e`` and an accent), the
    look-alikes of :data:`FOLDED` (before and after case folding, so that a capital and a small
    Cyrillic letter both fold), letter case folded (``Task-1`` is ``task-1``), decimal digits of
    any script as ASCII, white space (a tab, a no-break space) as a space, without characters
    that do not show (a zero-width space, a direction mark, a NUL) and without white space at
    either end."""
    if name.isascii() and name.isprintable():  # the usual case, and quick
        return name.strip(" ").lower()
    text = unicodedata.normalize("NFKC", name).translate(FOLDED).casefold().translate(FOLDED)
    if not text.isprintable():  # Python's printable: no format, control or space but " "
        text = "".join(_shown(c) for c in text)
    if not text.isascii():
        text = _NON_ASCII_DIGIT.sub(lambda m: str(unicodedata.decimal(m.group())), text)
    return text.strip()


def _shown(c: str) -> str:
    """White space shows as a space; a format or control character (a zero-width space, a
    direction mark, a NUL) as nothing."""
    if c.isspace():
        return " "
    return "" if unicodedata.category(c) in ("Cf", "Cc") else c

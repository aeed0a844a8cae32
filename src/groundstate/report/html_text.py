"""The one rule for text from runs and files on an HTML page (the report, the comparison, the
labelling sheet): cut past :data:`~groundstate.report.numbers.TEXT_LIMIT` characters,
escaped, and its bidirectional controls closed where it ends.

Autoescaping keeps markup, script and template text inert. It leaves the text itself exact,
bidirectional controls included (an id may be Hebrew with a mark in it), but an override or
embedding the text opens runs on to the end of its paragraph: a task id ending in U+202E
would show the `` · attempt 1`` after it, or the next task ids of a list, reversed. Every
value printed is therefore closed: each opener it leaves open gets its closer (PDF or PDI)
after it, and each item of a joined list is closed before the separator.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import jinja2
from markupsafe import Markup

from groundstate.report.numbers import clipped

_EMBEDDINGS = "\u202a\u202b\u202d\u202e"
"""LRE, RLE, LRO, RLO: closed by PDF (U+202C)."""
_ISOLATES = "\u2066\u2067\u2068"
"""LRI, RLI, FSI: closed by PDI (U+2069)."""
_PDF, _PDI = "\u202c", "\u2069"
_BIDI = re.compile(f"[{_EMBEDDINGS}{_ISOLATES}{_PDF}{_PDI}]")


def contained(text: str) -> str:
    """*text* followed by the closers of the embeddings, overrides and isolates it leaves
    open (as the Unicode bidirectional algorithm pairs them), innermost first."""
    if not _BIDI.search(text):
        return text
    open_: list[str] = []
    for char in _BIDI.findall(text):
        if char in _EMBEDDINGS:
            open_.append(_PDF)
        elif char in _ISOLATES:
            open_.append(_PDI)
        elif char == _PDF and open_ and open_[-1] == _PDF:
            open_.pop()  # a PDF closes no isolate
        elif char == _PDI and _PDI in open_:
            del open_[len(open_) - 1 - open_[::-1].index(_PDI) :]  # and what it holds
    return text + "".join(reversed(open_))


def _finalize(value: Any) -> Any:
    """Every ``{{ value }}``: text is cut (:func:`clipped`: a message of megabytes made pages
    of tens) and closed (markup the templates made is left as it is)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return contained(clipped(value))
    return value


def _join(items: Iterable[Any], separator: str = "") -> str:
    """``join`` with each item closed: one id cannot reorder the ids after it. The result is
    cut as any value is (by ``finalize``), after each item's closers."""
    return separator.join(contained(clipped(str(item))) for item in items)


def environment(**options: Any) -> jinja2.Environment:
    """A Jinja environment applying the rule: autoescape on, every value closed."""
    env = jinja2.Environment(autoescape=True, finalize=_finalize, **options)
    env.filters["join"] = _join
    return env

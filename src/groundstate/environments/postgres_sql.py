"""SQLite's meaning of ``LIKE`` and ``ORDER BY``, written so PostgreSQL gives the same rows.

The same SQL answered otherwise on the two kinds, with no error: SQLite's ``LIKE`` ignores the
case of ASCII letters and has no escape character (PostgreSQL's is case-sensitive and takes
``\\`` as its escape), and SQLite puts NULLs first when ordering ascending, last descending
(PostgreSQL the other way round). A tool's search or a grader's ``ORDER BY ... LIMIT 1`` then
found other rows, and the same task graded otherwise, without a message. :func:`sqlite_meaning`
rewrites a statement so PostgreSQL answers as SQLite does: ``LIKE`` becomes ``ILIKE`` (which
folds ASCII letters only in the template's ``C`` ctype, as SQLite's ``LIKE`` does) with
``ESCAPE ''`` where the statement gives no ``ESCAPE``, and each ``ORDER BY`` term that does not
say where its NULLs go gets SQLite's place (``NULLS FIRST`` ascending, ``NULLS LAST``
descending). String literals, quoted names and comments are left as they are.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<string>'(?:[^']|'')*'?)
    |(?P<name>"(?:[^"]|"")*"?)
    |(?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    |(?P<other><=|>=|<>|!=|==|\|\||.)""",
    re.VERBOSE | re.DOTALL,
)
_PATTERN_ENDS = {
    "AND", "OR", "NOT", "ESCAPE", "THEN", "ELSE", "END", "WHEN", "FROM", "WHERE", "GROUP",
    "ORDER", "LIMIT", "OFFSET", "HAVING", "UNION", "INTERSECT", "EXCEPT", "IS", "IN",
    "BETWEEN", "LIKE", "ILIKE", "GLOB", "COLLATE", "RETURNING", "AS", "ASC", "DESC", "ON",
    "JOIN", "USING", "SET", "VALUES",
}  # fmt: skip
"""Words that end a ``LIKE``'s pattern (at its own depth of parentheses)."""
_COMPARISONS = {",", ")", ";", "=", "==", "<", ">", "<=", ">=", "<>", "!="}
_ORDER_ENDS = {
    "LIMIT", "OFFSET", "FETCH", "FOR", "UNION", "INTERSECT", "EXCEPT", "WINDOW", "ROWS",
    "RANGE", "GROUPS", "RETURNING",
}  # fmt: skip
"""Words that end an ``ORDER BY`` list (at its own depth of parentheses)."""

Token = tuple[str, str]


@lru_cache(maxsize=4096)
def sqlite_meaning(sql: str) -> str:
    """*sql* rewritten so PostgreSQL's ``LIKE`` and NULL ordering are SQLite's."""
    upper = sql.upper()
    if "LIKE" not in upper and "ORDER" not in upper:
        return sql
    tokens = [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(sql)]
    return "".join(text for _, text in _nulls_placed(_like_folded(tokens)))


def _word(token: Token) -> str:
    return token[1].upper() if token[0] == "word" else ""


def _significant(tokens: list[Token], start: int) -> int:
    """The index of the first token from *start* that is not space or a comment."""
    while start < len(tokens) and tokens[start][0] in ("space", "comment"):
        start += 1
    return start


def _like_folded(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    for i, token in enumerate(tokens):
        if _word(token) != "LIKE":
            out.append(token)
            continue
        out.append(("word", "ILIKE"))
        end = _expression_end(tokens, i + 1, _PATTERN_ENDS, _COMPARISONS)
        if _word(tokens[end] if end < len(tokens) else ("", "")) != "ESCAPE":
            _append_after_last(tokens, i, end, " ESCAPE ''")
    return out


def _expression_end(tokens: list[Token], start: int, words: set[str], marks: set[str]) -> int:
    """The index of the token ending the expression from *start*: one of *words* or *marks*
    at the expression's own depth, a parenthesis closing it, or the end."""
    depth, i = 0, _significant(tokens, start)
    first = i
    while i < len(tokens):
        text = tokens[i][1]
        if text == "(":
            depth += 1
        elif text == ")" and depth:
            depth -= 1
        elif depth == 0 and (
            text == ")" or (i > first and (_word(tokens[i]) in words or text in marks))
        ):
            return i
        i += 1
    return i


def _append_after_last(tokens: list[Token], start: int, end: int, text: str) -> None:
    """Append *text* to the last significant token after *start* and before *end* (none:
    nothing to append to)."""
    last = end - 1
    while last > start and tokens[last][0] in ("space", "comment"):
        last -= 1
    if last > start:
        tokens[last] = (tokens[last][0], tokens[last][1] + text)


def _nulls_placed(tokens: list[Token]) -> list[Token]:
    """Each ``ORDER BY`` term not saying where NULLs go given SQLite's place for them."""
    tokens = list(tokens)
    i = 0
    while i < len(tokens):
        if _word(tokens[i]) == "ORDER":
            after = _significant(tokens, i + 1)
            if after < len(tokens) and _word(tokens[after]) == "BY":
                i = _place_terms(tokens, after + 1)
                continue
        i += 1
    return tokens


def _place_terms(tokens: list[Token], start: int) -> int:
    """Place the NULLs of every term of the list from *start*; the index after the list."""
    while True:
        end = _expression_end(tokens, start, _ORDER_ENDS, {",", ")", ";"})
        words = [_word(t) for t in tokens[start:end] if t[0] == "word"]
        if "NULLS" not in words[1:]:
            place = " NULLS LAST" if words[-1:] == ["DESC"] else " NULLS FIRST"
            _append_after_last(tokens, start - 1, end, place)
        if end >= len(tokens) or tokens[end][1] != ",":
            return end
        start = end + 1

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

from groundstate.environments.base import sqlite_affinity

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>--[^\n]*|/\*.*?(?:\*/|\Z))
    |(?P<string>'(?:[^']|'')*'?)
    |(?P<name>"(?:[^"]|"")*"?)
    |(?P<word>[A-Za-z_][A-Za-z0-9_$]*)
    |(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
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


_REWRITTEN = re.compile(
    r"LIKE|ORDER|CAST|DATE|TIME|[0-9][.eE]|\.[0-9]|[0-9]{19}|[=<>]", re.IGNORECASE
)
"""What :func:`sqlite_meaning` may rewrite (any other statement is left as it is, untokenized)."""
_INT64_MAX = 2**63 - 1


@lru_cache(maxsize=4096)
def sqlite_meaning(sql: str) -> str:
    """*sql* rewritten so PostgreSQL's ``LIKE``, NULL ordering, REAL literals and casts to
    INTEGER are SQLite's."""
    if not _REWRITTEN.search(sql):
        return sql
    tokens = [(m.lastgroup or "other", m.group()) for m in _TOKEN.finditer(sql)]
    tokens = _integer_casts(_reals(_like_folded(_sqlite_dates(_compared(tokens)))))
    return "".join(text for _, text in _nulls_placed(tokens))


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


_COMPARED = {"=": "eq", "==": "eq", "<>": "ne", "!=": "ne", "<": "lt", "<=": "le", ">": "gt",
              ">=": "ge"}  # fmt: skip
_BEFORE_OPERAND = {"", "(", "WHERE", "AND", "OR", "NOT", "ON", "WHEN", "THEN", "ELSE", "SELECT",
                   "HAVING", "RETURNING"}  # fmt: skip
"""What may come before a comparison's left operand for it to be that operand alone (not
``SET``, ``,``: an assignment; not an operator binding tighter than the comparison)."""
_AFTER_OPERAND = {"", ")", ",", ";", "AND", "OR", "THEN", "END", "ORDER", "GROUP", "LIMIT",
                  "WHEN", "ELSE", "HAVING", "UNION", "INTERSECT", "EXCEPT", "RETURNING",
                  "OFFSET", "WINDOW", "FROM", "AS", "WHERE", "JOIN", "LEFT", "RIGHT", "INNER",
                  "OUTER", "CROSS", "FULL", "NATURAL"}  # fmt: skip
_NOT_COLUMNS = {"NULL", "TRUE", "FALSE", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP",
                "CURRENT_USER", "SESSION_USER", "USER", "LOCALTIME", "LOCALTIMESTAMP", "NOT",
                "EXISTS", "CASE", "ALL", "ANY", "SOME", "DEFAULT"} | _PATTERN_ENDS  # fmt: skip


def _operand(tokens: list[Token], start: int, step: int) -> tuple[str, int]:
    """The kind of the single operand at *start* read in direction *step* (``column``,
    ``string``, ``number`` or ``""``: another expression), and the index past it."""
    i = _significant_toward(tokens, start, step)
    if i < 0 or i >= len(tokens):
        return "", i
    kind, text = tokens[i]
    if kind in ("string", "number"):
        return kind, i + step
    if kind == "name" or (kind == "word" and text.upper() not in _NOT_COLUMNS):
        j = _significant_toward(tokens, i + step, step)  # a qualified name: t.code
        if 0 <= j < len(tokens) and tokens[j][1] == ".":
            k = _significant_toward(tokens, j + step, step)
            if 0 <= k < len(tokens) and tokens[k][0] in ("word", "name"):
                return "column", k + step
            return "", k
        return "column", i + step
    return "", i


def _significant_toward(tokens: list[Token], i: int, step: int) -> int:
    while 0 <= i < len(tokens) and tokens[i][0] in ("space", "comment"):
        i += step
    return i


def _bounded(tokens: list[Token], i: int, step: int, allowed: set[str]) -> bool:
    """Whether the token from *i* in direction *step* lets an operand end there."""
    i = _significant_toward(tokens, i, step)
    if i < 0 or i >= len(tokens):
        return True
    return (_word(tokens[i]) or tokens[i][1]).upper() in allowed


_CLAUSES = {"SET", "SELECT", "WHERE", "ON", "HAVING", "RETURNING", "WHEN", "THEN", "ELSE",
            "VALUES", "BY", "FROM"}  # fmt: skip


def _listed(tokens: list[Token], i: int) -> set[str]:
    """``{","}`` where a comma before an operand separates a list's items that are
    expressions (a select list, arguments), not ``SET``'s assignments (``SET a = b, c = d``)."""
    depth = 0
    while i >= 0:
        text = tokens[i][1]
        depth += (text == ")") - (text == "(")
        if depth < 0:
            return {","}  # inside parentheses: arguments or a row
        if depth == 0 and _word(tokens[i]) in _CLAUSES:
            return set() if _word(tokens[i]) == "SET" else {","}
        i -= 1
    return {","}


def _compared(tokens: list[Token]) -> list[Token]:
    """A comparison of two columns, or of a string literal with a number literal, as SQLite
    compares them (PostgreSQL's operators see values, not where they came from):

    - two columns, text and a number (``code = qty``): the text as a number where it reads
      as one, else the number is less (SQLite applies the number column's affinity to the
      text); ``groundstate.cmp_<op>(a, b)``, which is ``a <op> b`` for two of one type;
    - a string and a number literal (``'3' = 3``): SQLite's type order, a number less than
      any text, as no affinity applies (PostgreSQL read ``'3'`` as 3, and failed on ``'a'``).

    A column compared with a literal or parameter keeps the harness's operators (the text
    column's affinity: ``code = 5`` is compared as text, as SQLite does)."""
    out = list(tokens)
    for i, (kind, text) in enumerate(tokens):
        if kind != "other" or text not in _COMPARED:
            continue
        left, before = _operand(tokens, i - 1, -1)
        right, after = _operand(tokens, i + 1, 1)
        if not left or not right:
            continue
        if not (_bounded(tokens, before, -1, _BEFORE_OPERAND | _listed(tokens, before))
                and _bounded(tokens, after, 1, _AFTER_OPERAND)):  # fmt: skip
            continue
        first, last = before + 1, after - 1
        if left == right == "column":
            name = _COMPARED[text]
            a = "".join(t for _, t in tokens[first:i]).strip()
            b = "".join(t for _, t in tokens[i + 1 : last + 1]).strip()
            out[first] = ("other", f"groundstate.cmp_{name}({a}, {b})")
        elif {left, right} == {"string", "number"}:
            ranks = ("1" if left == "number" else "2", "1" if right == "number" else "2")
            out[first] = ("other", f"({ranks[0]} {text.replace('==', '=')} {ranks[1]})")
        else:
            continue
        for j in range(first + 1, last + 1):
            out[j] = ("space", "")
    return out


_DATE_FUNCTIONS = {"DATE": "groundstate.sqlite_date", "TIME": "groundstate.sqlite_time"}


def _sqlite_dates(tokens: list[Token]) -> list[Token]:
    """SQLite's ``date(...)`` and ``time(...)`` made the harness's (``postgres_functions``):
    PostgreSQL reads ``date('now')`` as a cast, the server's date, not the task's clock, and
    ``date(x, '+1 day')`` as no function at all. A type name (``CAST(x AS time(3))``) and a
    qualified name are left as they are."""
    out = list(tokens)
    for i, token in enumerate(tokens):
        function = _DATE_FUNCTIONS.get(_word(token))
        after = _significant(tokens, i + 1)
        if function is None or after >= len(tokens) or tokens[after][1] != "(":
            continue
        before = i - 1
        while before >= 0 and tokens[before][0] in ("space", "comment"):
            before -= 1
        if before >= 0 and (tokens[before][1] == "." or _word(tokens[before]) == "AS"):
            continue
        out[i] = ("other", function)
    return out


def _reals(tokens: list[Token]) -> list[Token]:
    """Each literal SQLite reads as a REAL (``0.1``, ``1e3``, an integer past 2^63) made a
    ``double precision``: PostgreSQL's ``numeric`` computed otherwise, with no error (``0.1 +
    0.2`` was ``0.3``, SQLite's ``0.30000000000000004``; ``5.5 % 2`` was ``1.5``, SQLite's
    ``1.0``; ``1e308 * 10`` a 309-digit integer, SQLite's ``Inf``)."""
    return [
        ("other", f"CAST({text} AS double precision)")
        if kind == "number" and (not text.isdigit() or int(text) > _INT64_MAX)
        else (kind, text)
        for kind, text in tokens
    ]


def _integer_casts(tokens: list[Token]) -> list[Token]:
    """Each ``CAST(x AS <a type of INTEGER affinity>)`` made ``groundstate.cast_integer(x)``,
    SQLite's cast: 64 bits (PostgreSQL's INTEGER is 32: ``CAST(3000000000 AS INTEGER)`` was
    its error), clamped past 2^63, and text read by its leading digits (``'12abc'`` is 12,
    ``'abc'`` and ``''`` are 0: PostgreSQL's errors). Each ``CAST(x AS <REAL affinity>)``
    made ``groundstate.cast_real(x)``: a double (PostgreSQL's ``REAL`` is 4 bytes, and
    ``CAST(0.1 AS REAL)`` was 0.100000001490116), text read by its leading number."""
    tokens = list(tokens)
    for i, token in enumerate(tokens):
        if _word(token) != "CAST":
            continue
        opening = _significant(tokens, i + 1)
        if opening >= len(tokens) or tokens[opening][1] != "(":
            continue
        closing = _expression_end(tokens, opening + 1, set(), set())
        depth, as_at = 0, None
        for j in range(opening + 1, closing):
            text = tokens[j][1]
            depth += (text == "(") - (text == ")")
            if depth == 0 and _word(tokens[j]) == "AS":
                as_at = j
        if as_at is None or closing >= len(tokens):
            continue
        type_name = "".join(_word(t) for t in tokens[as_at + 1 : closing])
        function = _CAST_FUNCTIONS.get(sqlite_affinity(type_name))
        if function is not None:
            tokens[i] = ("other", function)
            tokens[as_at:closing] = [("space", "")] * (closing - as_at)
    return tokens


_CAST_FUNCTIONS = {"INTEGER": "groundstate.cast_integer", "REAL": "groundstate.cast_real"}


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

"""SQLite's scalar functions and aggregates that PostgreSQL lacks or means otherwise.

Tools and graders written for SQLite call ``typeof``, ``ifnull``, ``iif``, ``instr``,
``hex``, ``group_concat``, ``length`` and ``substr`` of a number, two-argument ``max`` and
``min``, and the date functions (``date``, ``time``, ``datetime``, ``julianday``,
``strftime``); on PostgreSQL each was "function ... does not exist", so a tool failed and a
grader's query errored where SQLite answered. Each is installed in the harness's schema,
first on the agent's and graders' ``search_path``, with SQLite's meaning; the date functions
read the task's clock for ``'now'`` (PostgreSQL's ``date('now')`` is a cast reading the
server's clock: ``sqlite_meaning`` names the harness's ``date`` and ``time``).

What cannot mean the same is refused with a message naming it (a date modifier the harness
does not carry, ``strftime``'s ``%J``), never answered otherwise.
"""

from __future__ import annotations

API = "groundstate"
INTERNAL = "_gs"
_INTEGERS = ("smallint", "integer", "bigint")
_REALS = ("double precision", "numeric")
_NUMBERS = (*_INTEGERS, *_REALS)
POSITIONS = (*_INTEGERS, "double precision")
"""The types a position of ``substr`` is taken as: every integer type (a parameter's small
integer is a ``smallint``) and ``double precision``, the numbers' preferred type, which a NULL
parameter (of no type) resolves to. With only some, ``substr(s, ?)`` matched several after
casts and PostgreSQL refused the call as ambiguous."""


def _create(
    signature: str, returns: str, body: str, *, language: str = "sql", volatility: str = ""
) -> str:
    """A function of the harness's schema, not STRICT (SQLite's answer to NULL is its own);
    IMMUTABLE unless it reads the clock (a fixture's CHECK or index may call it)."""
    return (
        f"CREATE FUNCTION {signature} RETURNS {returns} {volatility or 'IMMUTABLE'} "
        f"LANGUAGE {language} "
        f"SET search_path = pg_catalog AS $gs${body}$gs$"
    )


def _types() -> list[str]:
    """``typeof``: SQLite's storage class of the value ('null' for NULL)."""
    classes = {
        **{kind: "integer" for kind in (*_INTEGERS, "boolean")},
        **{kind: "real" for kind in _REALS},
        "text": "text",
        "bytea": "blob",
    }
    return [
        _create(
            f"{API}.typeof(v {kind})",
            "text",
            f"SELECT CASE WHEN v IS NULL THEN 'null' ELSE '{name}' END",
        )
        for kind, name in classes.items()
    ]


def _choices() -> list[str]:
    """``ifnull``, ``iif`` (a number as its condition: true when not 0) and ``max``/``min``
    of two or three values (NULL when any is: PostgreSQL's ``greatest`` skips NULLs)."""
    statements = [
        _create(
            f"{API}.ifnull(a anycompatible, b anycompatible)",
            "anycompatible",
            "SELECT coalesce(a, b)",
        ),
        _create(
            f"{API}.iif(c boolean, a anycompatible, b anycompatible)",
            "anycompatible",
            "SELECT CASE WHEN c THEN a ELSE b END",
        ),
    ]
    statements += [
        _create(
            f"{API}.iif(c {kind}, a anycompatible, b anycompatible)",
            "anycompatible",
            "SELECT CASE WHEN c <> 0 THEN a ELSE b END",
        )
        for kind in _NUMBERS
    ]
    for name, pick in (("max", "greatest"), ("min", "least")):
        for count in (2, 3):
            names = [f"v{i}" for i in range(count)]
            arguments = ", ".join(f"{v} anycompatible" for v in names)
            nulls = " OR ".join(f"{v} IS NULL" for v in names)
            statements.append(
                _create(
                    f"{API}.{name}({arguments})",
                    "anycompatible",
                    f"SELECT CASE WHEN {nulls} THEN NULL ELSE {pick}({', '.join(names)}) END",
                )
            )
    statements.append(
        # a value written once where SQL would write it twice (postgres_sql._once)
        _create(f"{API}.value(v anycompatible)", "anycompatible", "SELECT v")
    )
    return statements + _mixed_choices()


MIXED_CHOICE = (
    "%() of an INTEGER and a REAL chose the INTEGER %, which the postgres kind cannot "
    "return as an INTEGER (SQLite keeps the type of the value chosen; here the result type is "
    "fixed when the statement is planned): write both as REALs (n * 1.0) or both as integers"
)
"""Why a two-value ``max``/``min`` of an integer and a REAL failed on PostgreSQL."""


def _mixed_choices() -> list[str]:
    """``max(a, b)``/``min(a, b)`` of two numbers: SQLite returns the chosen value as it is
    (``max(3, 2.5)`` is the integer 3, ``max(2, 2.5)`` the REAL 2.5; of equal values ``max``
    keeps the first, ``min`` the second). PostgreSQL's common type made every answer of an
    integer and a REAL a REAL (3.0: another ``typeof``, another text in a TEXT column, with
    no error): the REAL is returned when chosen, the integer refused with
    :data:`MIXED_CHOICE`. Each pair of number types is declared, so the planner takes the
    exact one (an integer beside a bigint is not read as a REAL), and two texts, which two
    string literals or parameters are (of unknown type, as the two-value ``anycompatible``
    read them)."""
    statements = []
    for name, pick in (("max", "greatest"), ("min", "least")):
        # max keeps a unless a < b; min keeps a unless a >= b
        keeps_first = "a >= b" if name == "max" else "a < b"
        statements.append(
            _create(
                f"{API}.{name}(a text, b text)",
                "text",
                f"SELECT CASE WHEN a IS NULL OR b IS NULL THEN NULL ELSE {pick}(a, b) END",
            )
        )
        for first in _NUMBERS:
            for second in _NUMBERS:
                signature = f"{API}.{name}(a {first}, b {second})"
                if (first in _INTEGERS) == (second in _INTEGERS):
                    returns = "bigint" if first in _INTEGERS else "double precision"
                    if "numeric" in (first, second):
                        returns = "numeric"
                    statements.append(
                        _create(
                            signature,
                            returns,
                            "SELECT CASE WHEN a IS NULL OR b IS NULL THEN NULL "
                            f"ELSE {pick}(a, b) END",
                        )
                    )
                    continue
                real_is_a = first in _REALS
                body = (
                    "BEGIN IF a IS NULL OR b IS NULL THEN RETURN NULL; END IF; "
                    f"IF ({keeps_first}) = {'true' if real_is_a else 'false'} "
                    f"THEN RETURN {'a' if real_is_a else 'b'}; END IF; "
                    f"RAISE EXCEPTION '{MIXED_CHOICE}', '{name}', "
                    f"{'b' if real_is_a else 'a'}; END"
                )
                real = first if real_is_a else second
                statements.append(_create(signature, real, body, language="plpgsql"))
    return statements


def _texts() -> list[str]:
    """``instr``, ``hex`` ('' of NULL), ``length`` and ``substr`` of a number (of its text,
    a REAL's as SQLite writes it: the harness's cast to text)."""
    statements = [
        _create(f"{API}.instr(x text, y text)", "bigint", "SELECT strpos(x, y)"),
        _create(f"{API}.instr(x bytea, y bytea)", "bigint", "SELECT position(y IN x)"),
        _create(f"{API}.hex(v bytea)", "text", "SELECT coalesce(upper(encode(v, 'hex')), '')"),
        _create(
            f"{API}.hex(v text)",
            "text",
            "SELECT coalesce(upper(encode(convert_to(v, 'UTF8'), 'hex')), '')",
        ),
    ]
    for kind in _NUMBERS:
        text = "CAST(v AS text)"
        statements += [
            _create(f"{API}.hex(v {kind})", "text", f"SELECT {API}.hex({text})"),
            _create(f"{API}.length(v {kind})", "bigint", f"SELECT char_length({text})"),
            _create(f"{API}.instr(v {kind}, y text)", "bigint", f"SELECT strpos({text}, y)"),
        ]
        for one in POSITIONS:  # every pair of position types, as the text's
            statements.append(
                _create(
                    f"{API}.substr(v {kind}, p1 {one})", "text", f"SELECT {API}.substr({text}, p1)"
                )
            )
            statements += [
                _create(
                    f"{API}.substr(v {kind}, p1 {one}, p2 {two})",
                    "text",
                    f"SELECT {API}.substr({text}, p1, p2)",
                )
                for two in POSITIONS
            ]
    return statements


_GLOB = (
    "DECLARE r text := '^'; i int := 1; n int := length(p); c text; j int; k int; "
    "neg boolean; BEGIN IF s IS NULL OR p IS NULL THEN RETURN NULL; END IF; "
    "WHILE i <= n LOOP c := substr(p, i, 1); "
    "  IF c = '*' THEN r := r || '.*'; "
    "  ELSIF c = '?' THEN r := r || '.'; "
    "  ELSIF c = '[' THEN neg := substr(p, i + 1, 1) = '^'; "
    "    j := i + 1 + CASE WHEN neg THEN 1 ELSE 0 END; "
    # a ']' first in the class is one of its characters; an unclosed class matches nothing
    "    k := strpos(substr(p, j + 1), ']'); "
    "    IF k = 0 THEN RETURN false; END IF; "
    "    r := r || '[' || CASE WHEN neg THEN '^' ELSE '' END "
    r"      || replace(replace(substr(p, j, k), '\', '\\'), '[', '\[') || ']'; "
    "    i := j + k; "
    r"  ELSIF c ~ '[[:alnum:]]' OR c !~ '^[[:ascii:]]$' THEN r := r || c; "
    r"  ELSE r := r || '\' || c; END IF; "
    "  i := i + 1; "
    "END LOOP; RETURN s ~ (r || '$'); END"
)
"""SQLite's GLOB as a regular expression of PostgreSQL's, anchored at both ends."""


def _sqlite_scalars() -> list[str]:
    """SQLite's ``GLOB`` (``postgres_sql`` writes ``a GLOB b`` as the operator ``~#``, ``a NOT
    GLOB b`` as ``!~#``: case-sensitive, ``*``, ``?``, ``[...]`` and ``[^...]``, a number
    matched by its text), ``quote``, ``char`` (``postgres_sql`` names the harness's: ``char``
    is a type to PostgreSQL), ``unicode``, ``zeroblob``, ``likelihood``/``likely``/
    ``unlikely``, ``lower``/``upper`` of a number (of its text) and ``sign`` (an integer, as
    SQLite's: PostgreSQL's of a REAL is a REAL, ``1.0``). PostgreSQL had none of them (or
    ``sign``'s other type): a tool's call failed, or answered otherwise. A value SQLite's
    answer holds that PostgreSQL's text cannot (NUL: ``char(0)``) and a REAL whose 15 digits
    do not give it back (``quote`` writes such one with 20) are refused by name."""
    glob, not_glob = f"{API}.glob", f"{API}.not_glob"
    statements = [
        _create(f"{glob}(s text, p text)", "boolean", _GLOB, language="plpgsql"),
        _create(f"{not_glob}(s text, p text)", "boolean", f"SELECT NOT {glob}(s, p)"),
        _create(
            f"{API}.quote(v text)",
            "text",
            "SELECT CASE WHEN v IS NULL THEN 'NULL' ELSE '''' || replace(v, '''', '''''') "
            "|| '''' END",
        ),
        _create(
            f"{API}.quote(v bytea)",
            "text",
            "SELECT CASE WHEN v IS NULL THEN 'NULL' ELSE 'X''' || upper(encode(v, 'hex')) "
            "|| '''' END",
        ),
        _create(
            f"{API}.quote(v double precision)",
            "text",
            "BEGIN IF v IS NULL THEN RETURN 'NULL'; END IF; "
            "IF v = v AND abs(v) <> 'Infinity' AND CAST(CAST(v AS text) AS double precision) = v "
            "THEN RETURN CAST(v AS text); END IF; RAISE EXCEPTION 'quote() of the REAL % is "
            "not carried to the postgres kind (SQLite writes a REAL its 15 digits do not give "
            "back with 20)', v; END",
            language="plpgsql",
        ),
        _create(
            f"{API}.\"char\"(VARIADIC c bigint[] DEFAULT '{{}}')",
            "text",
            "BEGIN IF EXISTS (SELECT 1 FROM unnest(c) AS u(x) WHERE x IS NULL OR x <= 0 "
            "OR x > 1114111) THEN RAISE EXCEPTION 'char() of a NUL or a number past the "
            "code points is not carried to the postgres kind (its text holds no NUL)'; "
            "END IF; RETURN (SELECT coalesce(string_agg(chr(int4(x)), '' ORDER BY o), '') "
            "FROM unnest(c) WITH ORDINALITY AS u(x, o)); END",
            language="plpgsql",
        ),
        _create(f"{API}.unicode(v text)", "bigint", "SELECT CASE WHEN v <> '' THEN ascii(v) END"),
        _create(
            f"{API}.zeroblob(n bigint)",
            "bytea",
            "SELECT CASE WHEN n IS NOT NULL THEN decode(repeat('00', int4(greatest(n, 0))), "
            "'hex') END",
        ),
    ]
    for kind in ("text", "bytea", "boolean", *_NUMBERS):
        statements += [
            _create(f"{API}.likelihood(v {kind}, p double precision)", kind, "SELECT v"),
            _create(f"{API}.likely(v {kind})", kind, "SELECT v"),
            _create(f"{API}.unlikely(v {kind})", kind, "SELECT v"),
        ]
    for kind in _NUMBERS:
        text = "CAST(v AS text)"
        statements += [
            _create(f"{glob}(s {kind}, p text)", "boolean", f"SELECT {glob}(CAST(s AS text), p)"),
            _create(
                f"{not_glob}(s {kind}, p text)", "boolean", f"SELECT NOT {glob}(CAST(s AS text), p)"
            ),
            _create(f"{API}.unicode(v {kind})", "bigint", f"SELECT {API}.unicode({text})"),
            _create(f"{API}.lower(v {kind})", "text", f"SELECT lower({text})"),
            _create(f"{API}.upper(v {kind})", "text", f"SELECT upper({text})"),
            _create(f"{API}.sign(v {kind})", "bigint", "SELECT int8(pg_catalog.sign(v))"),
        ]
        if kind not in _REALS:
            statements.append(
                _create(f"{API}.quote(v {kind})", "text", f"SELECT coalesce({text}, 'NULL')")
            )
    for kind in ("text", *_NUMBERS):
        statements += [
            f"CREATE OPERATOR {API}.~# (LEFTARG = {kind}, RIGHTARG = text, FUNCTION = {glob})",
            f"CREATE OPERATOR {API}.!~# (LEFTARG = {kind}, RIGHTARG = text, FUNCTION = {not_glob})",
        ]
    return statements


def _nocase() -> list[str]:
    """``groundstate.nocase(x)``, the key ``postgres_sql`` orders ``ORDER BY x COLLATE
    NOCASE`` by: the text with ASCII's capitals made small (SQLite's NOCASE folds ASCII
    only), compared by bytes as SQLite's collation then compares; a number as it is."""
    upper, lower = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz"
    statements = [
        _create(f"{API}.nocase(v text)", "text", f"SELECT translate(v, '{upper}', '{lower}')")
    ]
    return statements + [
        _create(f"{API}.nocase(v {kind})", kind, "SELECT v") for kind in ("bytea", *_NUMBERS)
    ]


_PRINTF = (
    "DECLARE out text := ''; i int := 1; k int := 0; m text[]; flags text; width int; "
    "prec int; c text; v text; w bigint; x numeric; r double precision; sign text; body text; "
    "BEGIN IF fmt IS NULL THEN RETURN NULL; END IF; "
    "WHILE i <= length(fmt) LOOP "
    "  IF substr(fmt, i, 1) <> '%' THEN out := out || substr(fmt, i, 1); i := i + 1; "
    "    CONTINUE; END IF; "
    r"  m := regexp_match(substr(fmt, i), '^(%([-+ 0#,!]*)([0-9]*)(\.([0-9]*))?(.?))'); "
    "  i := i + length(m[1]); flags := m[2]; c := m[6]; "
    "  width := CASE WHEN m[3] = '' THEN 0 ELSE CAST(m[3] AS int) END; "
    "  prec := CASE WHEN m[4] IS NULL THEN NULL "
    "    ELSE CAST(coalesce(nullif(m[5], ''), '0') AS int) END; "
    "  IF c = '%' AND m[1] = '%%' THEN out := out || '%'; CONTINUE; END IF; "
    "  IF c NOT IN ('s', 'd', 'i', 'f', 'e', 'E', 'x', 'X', 'o', 'c', 'q', 'Q') "
    "    OR flags ~ '[ #,!]' OR (c IN ('s', 'c', 'q', 'Q') AND flags ~ '[+0]') "
    "    OR (c IN ('d', 'i', 'x', 'X', 'o', 'c', 'q', 'Q') AND prec IS NOT NULL) "
    "    OR (c IN ('x', 'X', 'o') AND flags ~ '[+]') THEN "
    "    RAISE EXCEPTION 'printf''s % is not carried to the postgres kind (it carries "
    "%%s, %%d, %%i, %%f, %%e, %%E, %%x, %%X, %%o, %%c, %%q and %%Q, with the flags - + 0)', "
    "m[1]; END IF; "
    "  k := k + 1; v := args[k]; "
    "  IF c = 's' THEN body := coalesce(v, ''); sign := ''; "
    "    IF prec IS NOT NULL THEN "
    "      IF body !~ '^[[:ascii:]]*$' THEN RAISE EXCEPTION 'printf''s % of text "
    "that is not ASCII is not carried to the postgres kind (SQLite counts bytes)', m[1]; "
    "      END IF; body := left(body, prec); END IF; "
    "  ELSIF c = 'c' THEN "
    "    IF coalesce(v, '') = '' THEN RAISE EXCEPTION 'printf''s % of % is not carried to "
    "the postgres kind (SQLite writes a NUL, which its text cannot hold)', m[1], "
    "coalesce(quote_literal(v), 'NULL'); END IF; "
    # SQLite pads a character to the width in characters, not bytes
    "    body := left(v, 1); width := width + octet_length(body) - 1; "
    "  ELSIF c = 'q' THEN body := coalesce(replace(v, '''', ''''''), '(NULL)'); "
    "  ELSIF c = 'Q' THEN "
    "    body := coalesce('''' || replace(v, '''', '''''') || '''', 'NULL'); "
    "  ELSE "
    "    IF c IN ('d', 'i', 'x', 'X', 'o') THEN "
    r"      w := CASE WHEN v ~ '^\s*[+-]?[0-9]+\s*$' THEN {api}.cast_integer(v) "
    "        ELSE {api}.cast_integer({api}.cast_real(coalesce(v, '0'))) END; "
    "      sign := CASE WHEN w < 0 AND c IN ('d', 'i') THEN '-' ELSE '' END; "
    "      body := CASE c WHEN 'x' THEN to_hex(w) WHEN 'X' THEN upper(to_hex(w)) "
    "        WHEN 'o' THEN {api}.octal(w) ELSE ltrim(CAST(w AS text), '-') END; "
    "    ELSIF c IN ('e', 'E') THEN "
    "      r := {api}.cast_real(coalesce(v, '0')); prec := coalesce(prec, 6); "
    "      IF r <> r OR abs(r) = 'Infinity' OR prec > 13 "
    "        OR (r <> 0 AND abs(r) < 2.2250738585072014e-308) THEN RAISE EXCEPTION "
    "'printf''s % of % is not carried to the postgres kind (a finite number not subnormal, "
    "to 14 digits)', m[1], r; END IF; "
    "      sign := CASE WHEN r < 0 THEN '-' ELSE '' END; "
    # the shortest decimal of the double, its mantissa to 30 places (exact) and exponent
    "      x := CAST(CAST(abs(r) AS text) AS numeric); "
    "      body := ltrim(to_char(x, '9.' || repeat('0', 30) || 'EEEE')); "
    # a tie of the decimal that is not the double's value: which way SQLite goes is binary's
    "      IF substr(body, 3 + prec, 30 - prec) ~ '^50*$' "
    "        AND mod(x * power(CAST(2 AS numeric), scale(x)), 1) <> 0 THEN RAISE EXCEPTION "
    "'printf''s % of % is not carried to the postgres kind (a tie, which SQLite rounds in "
    "binary)', m[1], r; END IF; "
    "      w := CAST(split_part(body, 'e', 2) AS int); "
    "      x := round(CAST(split_part(body, 'e', 1) AS numeric), prec); "
    "      IF x >= 10 THEN x := round(x / 10, prec); w := w + 1; END IF; "
    "      body := to_char(x, 'FM0' || CASE WHEN prec > 0 THEN '.' || repeat('0', prec) "
    "        ELSE '' END) || CASE WHEN c = 'E' THEN 'E' ELSE 'e' END "
    "        || CASE WHEN w < 0 THEN '-' ELSE '+' END "
    "        || CASE WHEN abs(w) < 10 THEN '0' ELSE '' END || CAST(abs(w) AS text); "
    "    ELSE r := {api}.cast_real(coalesce(v, '0')); prec := coalesce(prec, 6); "
    "      IF r <> r OR abs(r) = 'Infinity' OR abs(r) >= 1e15 THEN RAISE EXCEPTION "
    "'printf''s % of % is not carried to the postgres kind (only numbers below 10^15)', "
    "m[1], r; END IF; "
    "      x := round(CAST(r AS numeric), prec); "
    "      sign := CASE WHEN r < 0 THEN '-' ELSE '' END; "
    "      body := to_char(abs(x), 'FM' || repeat('9', 20) || '0' "
    "        || CASE WHEN prec > 0 THEN '.' || repeat('0', prec) ELSE '' END); "
    "      body := rtrim(body, '.'); END IF; "
    "    IF sign = '' AND flags ~ '[+]' THEN sign := '+'; END IF; "
    "    IF flags ~ '0' AND flags !~ '-' THEN "
    "      body := lpad(body, greatest(width - length(sign), length(body)), '0'); END IF; "
    "    body := sign || body; sign := ''; "
    "  END IF; "
    "  IF octet_length(body) < width THEN "
    "    IF flags ~ '-' THEN body := body || repeat(' ', width - octet_length(body)); "
    "    ELSE body := repeat(' ', width - octet_length(body)) || body; END IF; "
    "  END IF; "
    "  out := out || body; "
    "END LOOP; RETURN out; END"
).replace("{api}", API)


def _printf() -> list[str]:
    """``printf``/``format`` (``postgres_sql`` names the harness's, given each value as
    SQLite's text of it): PostgreSQL had no ``printf``, and its own ``format('%s', 1.0)`` is
    ``1`` where SQLite's is ``1.0``. ``%s``, ``%d``/``%i``, ``%f``, ``%e``/``%E`` and
    ``%x``/``%X`` (of the 64-bit integer, a negative one as its two's complement) with a
    width, a precision and the flags ``-``, ``+`` and ``0`` are SQLite's (a width counted in
    bytes, as SQLite does; ``%f`` rounded half away from zero); any other conversion (``%g``,
    ``%o``, ``%c``, ``%q``...) or flag, ``%f`` of a number past 10^15 and a precision cutting
    text that is not ASCII are refused by name."""
    statements = [
        _create(
            f"{API}.printf(fmt text DEFAULT NULL, VARIADIC args text[] DEFAULT '{{}}')",
            "text",
            _PRINTF,
            language="plpgsql",
        ),
        _create(
            f"{API}.octal(w bigint)",
            "text",
            # of the 64 bits: a negative number as its two's complement
            "DECLARE x numeric := CASE WHEN w < 0 THEN w + 18446744073709551616 ELSE w END; "
            "o text := ''; BEGIN LOOP o := CAST(int4(mod(x, 8)) AS text) || o; x := div(x, 8); "
            "EXIT WHEN x = 0; END LOOP; RETURN o; END",
            language="plpgsql",
        ),
        _create(f"{API}.printf_arg(v text)", "text", "SELECT v"),
        _create(f"{API}.printf_arg(v bytea)", "text", "SELECT convert_from(v, 'UTF8')"),
        _create(f"{API}.printf_arg(v boolean)", "text", "SELECT CAST(int4(v) AS text)"),
    ]
    statements += [
        _create(f"{API}.printf_arg(v {kind})", "text", "SELECT CAST(v AS text)")
        for kind in _NUMBERS
    ]
    return statements


def _group_concat() -> list[str]:
    """``group_concat(x)`` and ``group_concat(x, separator)``: the values' text (a REAL's as
    SQLite writes it), NULLs skipped, NULL of no value."""
    step, join = f"{API}.group_concat_step", f"{API}.group_concat_join"
    statements = [
        _create(
            f"{join}(s text, v text, sep text)",
            "text",
            "SELECT CASE WHEN v IS NULL THEN s WHEN s IS NULL THEN v "
            "ELSE s || coalesce(sep, '') || v END",
        )
    ]
    for kind in ("text", *_NUMBERS):
        statements += [
            _create(f"{step}(s text, v {kind})", "text", f"SELECT {join}(s, CAST(v AS text), ',')"),
            _create(
                f"{step}(s text, v {kind}, sep text)",
                "text",
                f"SELECT {join}(s, CAST(v AS text), sep)",
            ),
            f"CREATE AGGREGATE {API}.group_concat({kind}) (SFUNC = {step}, STYPE = text)",
            f"CREATE AGGREGATE {API}.group_concat({kind}, text) (SFUNC = {step}, STYPE = text)",
        ]
    return statements + _distinct_group_concat()


def _distinct_group_concat() -> list[str]:
    """``group_concat(DISTINCT x)`` (``postgres_sql`` names this aggregate): each value's text
    once, in the order the rows come, as SQLite's (PostgreSQL's ``DISTINCT`` sorts the
    values first: ``'4,05,abc'`` came back ``'05,4,abc'``, with no error)."""
    step, final = f"{INTERNAL}.distinct_step", f"{INTERNAL}.distinct_join"
    statements = [
        _create(
            f"{final}(s text[])",
            "text",
            "SELECT CASE WHEN cardinality(s) > 0 THEN array_to_string(s, ',') END",
        )
    ]
    for kind in ("text", *_NUMBERS):
        statements += [
            _create(
                f"{step}(s text[], v {kind})",
                "text[]",
                "SELECT CASE WHEN v IS NULL OR CAST(v AS text) = ANY(s) THEN s "
                "ELSE s || CAST(v AS text) END",
            ),
            f"CREATE AGGREGATE {API}.group_concat_distinct({kind}) (SFUNC = {step}, "
            f"STYPE = text[], FINALFUNC = {final}, INITCOND = '{{}}')",
        ]
    return statements


_MODIFIERS_NOT_CARRIED = (
    r"^(localtime|utc|auto|subsec|subsecond|julianday|ceiling|floor"
    r"|[+-][0-9]{1,4}-|[+-]?[0-9]{1,2}:)"
)
"""SQLite's modifiers the harness does not carry (a time zone of the process, a shift by a
time of day or a date): refused by name, where SQLite answers."""
_MOMENT = (
    "DECLARE ts timestamp; m text; k text; n double precision; u text; d int; mo int; "
    "t text := btrim(v); "
    "BEGIN "
    "IF t IS NULL THEN RETURN NULL; END IF; "
    f"IF lower(t) = 'now' THEN ts := {API}.now() AT TIME ZONE 'UTC'; "
    "ELSIF t ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}([ T][0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]+)?)?)?$' "
    "THEN IF substr(t, 1, 4) = '0000' THEN RAISE EXCEPTION 'the year 0000 is not carried "
    "to the postgres kind' USING ERRCODE = '0A000'; END IF; "
    "  IF CAST(substr(t, 6, 2) AS int) NOT BETWEEN 1 AND 12 "
    "  OR CAST(substr(t, 9, 2) AS int) NOT BETWEEN 1 AND 31 THEN RETURN NULL; END IF; "
    "  ts := make_date(CAST(substr(t, 1, 4) AS int), CAST(substr(t, 6, 2) AS int), 1) "
    "    + (CAST(substr(t, 9, 2) AS int) - 1); "
    # SQLite takes a day up to 31 in any month and keeps it as written until a modifier
    # reads it (2026-02-30 is March 2, but 'start of day' gives 2026-02-30 back)
    "  IF extract(day FROM ts) <> CAST(substr(t, 9, 2) AS int) THEN RAISE EXCEPTION "
    "'the date % is not carried to the postgres kind (a day past the end of its month)', "
    "substr(t, 1, 10) USING ERRCODE = '0A000'; END IF; "
    "  t := substr(t, 12); "
    "ELSIF t ~ '^[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]+)?)?$' THEN ts := timestamp '2000-01-01'; "
    "ELSIF t ~ '^[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)$' THEN "
    "  IF lower(btrim(mods[1])) IS DISTINCT FROM 'unixepoch' AND NOT CAST(t AS double precision) "
    "    BETWEEN 1721425.5 AND 5373484.4 THEN RAISE EXCEPTION 'the Julian day % is not carried "
    "to the postgres kind (a year before 1 or after 9999)', t USING ERRCODE = '0A000'; END IF; "
    "  IF lower(btrim(mods[1])) = 'unixepoch' THEN "
    "    ts := timestamp '1970-01-01' + CAST(t AS double precision) * interval '1 second'; "
    "    mods := mods[2:]; "
    "  ELSE ts := timestamp '1970-01-01' + "
    "    round((CAST(t AS double precision) - 2440587.5) * 86400000) * interval '1 millisecond'; "
    "  END IF; "
    "ELSIF t ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9:.]+ *([zZ]|[+-][0-9]{2}:?[0-9]{2})$' "
    "THEN RAISE EXCEPTION 'the time % is not carried to the postgres kind (a time zone)', t "
    "USING ERRCODE = '0A000'; "
    "ELSE RETURN NULL; END IF; "
    "IF t ~ '^[0-9]{2}:[0-9]{2}' THEN "
    "  IF CAST(split_part(t, ':', 1) AS int) > 23 OR CAST(split_part(t, ':', 2) AS int) > 59 "
    "    OR CAST(coalesce(nullif(split_part(t, ':', 3), ''), '0') AS numeric) >= 60 "
    "  THEN RETURN NULL; END IF; "
    "  ts := ts + CAST(t AS interval); "
    "END IF; "
    "FOREACH m IN ARRAY coalesce(mods, ARRAY[]::text[]) LOOP "
    "  k := lower(btrim(m)); "
    "  IF k IS NULL THEN RETURN NULL; "
    "  ELSIF k ~ '^[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+) +(day|hour|minute|second|month|year)s?$' "
    "  THEN n := CAST(split_part(k, ' ', 1) AS double precision); "
    "    u := rtrim(btrim(substr(k, length(split_part(k, ' ', 1)) + 1)), 's'); "
    "    IF u IN ('month', 'year') THEN "
    "      IF n <> trunc(n) THEN RAISE EXCEPTION 'the date modifier % is not carried to the "
    "postgres kind (a fraction of a month or year)', m USING ERRCODE = '0A000'; END IF; "
    "      mo := extract(year FROM ts) * 12 + extract(month FROM ts) - 1 "
    "        + CASE WHEN u = 'year' THEN 12 ELSE 1 END * n; "
    "      d := extract(day FROM ts); "
    "      ts := make_date(mo / 12, mo % 12 + 1, 1) + (d - 1) + CAST(ts AS time); "
    "    ELSE ts := ts + n * CAST('1 ' || u AS interval); END IF; "
    "  ELSIF k = 'start of day' THEN ts := date_trunc('day', ts); "
    "  ELSIF k = 'start of month' THEN ts := date_trunc('month', ts); "
    "  ELSIF k = 'start of year' THEN ts := date_trunc('year', ts); "
    "  ELSIF k ~ '^weekday [0-6]$' THEN "
    "    ts := ts + ((CAST(substr(k, 9) AS int) - extract(dow FROM ts) + 7) % 7) "
    "      * interval '1 day'; "
    f"  ELSIF k ~ '{_MODIFIERS_NOT_CARRIED}' THEN RAISE EXCEPTION "
    "'the date modifier % is not carried to the postgres kind', m USING ERRCODE = '0A000'; "
    "  ELSE RETURN NULL; END IF; "
    "END LOOP; "
    "RETURN ts; END"
)
"""SQLite's reading of a time value and its modifiers: ``'now'`` the task's clock; a date,
date and time, or time of day; a number a Julian day (Unix seconds before ``'unixepoch'``);
``+N days``/hours/minutes/seconds/months/years (a month added keeps the day, then overflows
into the next month, as SQLite's: 2026-01-31 ``+1 month`` is 2026-03-03), ``start of``,
``weekday N``. NULL where SQLite's is NULL (a value or modifier it does not read)."""

_STRFTIME = (
    "DECLARE ts timestamp := {API}.moment(v, mods); r text := ''; i int := 1; c text; "
    "BEGIN IF ts IS NULL OR f IS NULL THEN RETURN NULL; END IF; "
    "WHILE i <= length(f) LOOP c := substr(f, i, 1); "
    "  IF c <> '%' THEN r := r || c; i := i + 1; CONTINUE; END IF; "
    "  c := substr(f, i + 1, 1); i := i + 2; "
    "  r := r || CASE c WHEN 'd' THEN to_char(ts, 'DD') WHEN 'H' THEN to_char(ts, 'HH24') "
    "    WHEN 'm' THEN to_char(ts, 'MM') WHEN 'M' THEN to_char(ts, 'MI') "
    "    WHEN 'S' THEN to_char(ts, 'SS') WHEN 'Y' THEN to_char(ts, 'YYYY') "
    "    WHEN 'f' THEN to_char(ts, 'SS.MS') WHEN 'j' THEN to_char(ts, 'DDD') "
    "    WHEN 'w' THEN CAST(CAST(extract(dow FROM ts) AS int) AS text) "
    "    WHEN 's' THEN CAST(CAST(floor(extract(epoch FROM ts)) AS bigint) AS text) "
    "    WHEN 'W' THEN lpad(CAST((CAST(extract(doy FROM ts) AS int) - 1 + 7 "
    "      - (CAST(extract(isodow FROM ts) AS int) - 1)) / 7 AS text), 2, '0') "
    "    WHEN '%' THEN '%' "
    "    WHEN 'J' THEN NULL "
    "    ELSE NULL END; "
    "  IF c = 'J' THEN RAISE EXCEPTION 'strftime''s %%J is not carried to the postgres kind "
    "(use julianday())' USING ERRCODE = '0A000'; END IF; "
    "  IF r IS NULL THEN RETURN NULL; END IF; "
    "END LOOP; RETURN r; END"
).replace("{API}", API)


def _dates() -> list[str]:
    """``date``, ``time``, ``datetime``, ``julianday`` and ``strftime`` on the task's clock,
    each with any number of modifiers."""
    moment = f"{API}.moment(v, mods)"
    formats = {
        "sqlite_date": f"SELECT to_char({moment}, 'YYYY-MM-DD')",
        "sqlite_time": f"SELECT to_char({moment}, 'HH24:MI:SS')",
        "datetime": f"SELECT to_char({moment}, 'YYYY-MM-DD HH24:MI:SS')",
        # SQLite's: the whole milliseconds since the Julian epoch, over a day's
        "julianday": (
            f"SELECT round(extract(epoch FROM {moment}) * 1000 + 210866760000000) "
            "/ 86400000.0::double precision"
        ),
    }
    statements = [
        _create(
            f"{API}.moment(v text, mods text[])",
            "timestamp",
            _MOMENT,
            language="plpgsql",
            volatility="STABLE",
        ),
        _create(
            f"{API}.strftime(f text, v text, VARIADIC mods text[])",
            "text",
            _STRFTIME,
            language="plpgsql",
            volatility="STABLE",
        ),
        _create(
            f"{API}.strftime(f text, v text)",
            "text",
            f"SELECT {API}.strftime(f, v, VARIADIC ARRAY[]::text[])",
            volatility="STABLE",
        ),
    ]
    for name, body in formats.items():
        returns = "double precision" if name == "julianday" else "text"
        statements += [
            _create(
                f"{API}.{name}(v text, VARIADIC mods text[])", returns, body, volatility="STABLE"
            ),
            _create(
                f"{API}.{name}(v text)",
                returns,
                f"SELECT {API}.{name}(v, VARIADIC ARRAY[]::text[])",
                volatility="STABLE",
            ),
        ]
        for kind in _NUMBERS:  # a number is a Julian day (Unix seconds before 'unixepoch')
            statements += [
                _create(
                    f"{API}.{name}(v {kind}, VARIADIC mods text[])",
                    returns,
                    f"SELECT {API}.{name}(CAST(v AS text), VARIADIC mods)",
                    volatility="STABLE",
                ),
                _create(
                    f"{API}.{name}(v {kind})",
                    returns,
                    f"SELECT {API}.{name}(CAST(v AS text))",
                    volatility="STABLE",
                ),
            ]
    return statements


_COMPARISONS = {"eq": "=", "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_NUMERIC_TEXT = r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"


def _column_comparisons() -> list[str]:
    """What ``sqlite_meaning`` makes of a comparison whose sides SQLite converts otherwise
    than the harness's operators would (their types alone do not say it: SQLite gives a
    column its affinity, an expression none), each ``groundstate.<family>_<op>(a, b)``:

    - ``cmp``, both sides with an affinity (two columns): text and a number by number
      where the text reads as one, else the number is less;
    - ``left``, the left side's only, beside a string literal or parameter (``qty = ?``):
      the right side takes it, so a number column and text by number where the text reads
      as one, else the number is less (PostgreSQL read the text as an integer, and failed);
    - ``right``, the right side's only (``? = code``, ``qty + 0 = code``): the left side
      takes it, so text and a number column by number, a number and a text column as text;
    - ``plain``, neither (``strftime('%Y', d) = 2026``): no conversion, text and a number
      by SQLite's type order (a number is less than any text).

    Two values of one type (or two numbers) are ``a <op> b``, which the planner inlines (no
    ``SET``: a join keeps its index and hash plans). ``(text, text)`` is declared too, so a
    string literal or parameter beside text is text, and beside a number is text (not read
    as the number, as PostgreSQL's own resolution would)."""
    statements = []
    for name, op in _COMPARISONS.items():
        number_less = "true" if op in ("<", "<=", "<>") else "false"
        text_less = "true" if op in (">", ">=", "<>") else "false"
        by_number = {
            "text": f"WHEN a ~ '{_NUMERIC_TEXT}' THEN CAST(a AS numeric) {op} b ELSE {text_less}",
            "number": f"WHEN b ~ '{_NUMERIC_TEXT}' THEN a {op} CAST(b AS numeric) "
            f"ELSE {number_less}",
        }
        bodies = {
            "cmp": by_number,
            "left": {"text": f"ELSE a {op} CAST(b AS text)", "number": by_number["number"]},
            "right": {**by_number, "number": f"ELSE CAST(a AS text) {op} b"},
            "plain": {"text": f"ELSE {text_less}", "number": f"ELSE {number_less}"},
        }
        for family, body in bodies.items():
            function = f"{API}.{family}_{name}"
            statements += [
                f"CREATE FUNCTION {function}(a {kinds}) RETURNS boolean "
                f"IMMUTABLE LANGUAGE sql AS $gs$SELECT a {op} b$gs$"
                for kinds in ("anycompatible, b anycompatible", "text, b text")
            ]
            for kind in _NUMBERS:
                statements += [
                    _create(
                        f"{function}(a text, b {kind})",
                        "boolean",
                        f"SELECT CASE WHEN a IS NULL OR b IS NULL THEN NULL {body['text']} END",
                    ),
                    _create(
                        f"{function}(a {kind}, b text)",
                        "boolean",
                        f"SELECT CASE WHEN a IS NULL OR b IS NULL THEN NULL {body['number']} END",
                    ),
                ]
    return statements


def function_sql() -> list[str]:
    """The statements installing SQLite's functions in the harness's schema (after its
    ``substr`` and ``now``, which some of them call)."""
    return [
        *_types(),
        *_choices(),
        *_texts(),
        *_printf(),
        *_group_concat(),
        *_sqlite_scalars(),
        *_nocase(),
        *_dates(),
        *_column_comparisons(),
    ]

"""Final states one detail from the expected one, eighth audit: values a reviewer reads as the
same must be the same in every part of an assertion, not only where it names an expected value.

- a float written back within 15 significant digits (a balance credited and debited again) is
  no change, for ``nothing_else_changed`` as for an expected value;
- text holding a JSON object or array is compared as the document (key order and spacing do
  not count, an array's order and the JSON types do), in ``state_diff`` and ``sql`` alike.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.grading.matching import same_value

from .test_outcome_round7 import CHECKS, FIXTURE, _diff, _graded, _sql

DOCS = """
CREATE TABLE doc (id TEXT PRIMARY KEY, body TEXT);
INSERT INTO doc VALUES ('d', '{"a": 1, "b": [1, 2]}');
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    """The seventh audit's fixture, and a table holding a JSON document."""
    (tmp_path / "f.sql").write_text(FIXTURE + DOCS, encoding="utf-8")
    (tmp_path / "checks.py").write_text(CHECKS, encoding="utf-8")
    with SqliteEnvironment(tmp_path / "f.sql", clock=datetime(2024, 1, 1)) as environment:
        environment.reset()
        yield environment


NOISE = "UPDATE acc SET bal = 2.0000000000000004 WHERE id = 'B'"  # 2 + 0.3 - 0.3, say
A_CHANGED = "UPDATE acc SET bal = 10.3 WHERE id = 'A'"
EXPECT_A = {"acc": {"changed": [{"key": "A", "set": {"bal": 10.3}}]}}


@pytest.mark.parametrize(
    ("writes", "expected"),
    [
        ([NOISE], {}),
        ([NOISE, A_CHANGED], EXPECT_A),
        (["UPDATE tr SET amount = 5.000000000000001", A_CHANGED], EXPECT_A),
    ],
    ids=["no-change-expected", "another-row-expected", "another-table"],
)
def test_a_float_written_back_within_its_precision_is_no_change(
    env: SqliteEnvironment,
    writes: list[str],
    expected: dict[str, object],
) -> None:
    """An expected value matched at 15 significant digits while the same noise in a row the
    task leaves alone was "unexpected change": a route crediting and debiting a balance
    failed where the reviewer sees the balance it started with."""
    [result] = _graded(env, writes, _diff(expected))
    assert result.passed, result.evidence["problems"]


@pytest.mark.parametrize(
    "write",
    ["UPDATE acc SET bal = 2.01 WHERE id = 'B'", "UPDATE acc SET note = 'x ' WHERE id = 'B'"],
)
def test_a_real_change_beside_the_expected_one_still_fails(
    env: SqliteEnvironment,
    write: str,
) -> None:
    [result] = _graded(env, [A_CHANGED, write], _diff(EXPECT_A))
    assert not result.passed
    assert result.evidence["problems"] == [
        f"acc: row B unexpectedly changed {['bal'] if 'bal' in write else ['note']}"
    ]


DOC = '{"size": "M", "ids": [1, 2], "gift": true}'


@pytest.mark.parametrize(
    ("stored", "same"),
    [
        ('{"ids":[1,2],"gift":true,"size":"M"}', True),  # key order, spacing
        ('{\n  "gift": true,\n  "ids": [1.0, 2],\n  "size": "M"\n}', True),  # 1.0 is 1
        ('{"size": "M", "ids": [2, 1], "gift": true}', False),  # an array's order counts
        ('{"size": "m", "ids": [1, 2], "gift": true}', False),  # text inside stays exact
        ('{"size": "M", "ids": ["1", 2], "gift": true}', False),  # "1" is not 1
        ('{"size": "M", "ids": [1, 2], "gift": 1}', False),  # true is not 1 in JSON
        ('{"size": "M", "ids": [1, 2]}', False),  # a key missing
        ('{"size": "M", "ids": [1, 2], "gift": true, "x": null}', False),  # one more key
    ],
)
def test_json_text_is_compared_as_the_document_it_holds(
    env: SqliteEnvironment,
    stored: str,
    same: bool,
) -> None:
    write = f"UPDATE acc SET note = '{stored}' WHERE id = 'A'"
    expected = _diff({"acc": {"changed": [{"key": "A", "set": {"note": DOC}}]}})
    query = _sql("SELECT note FROM acc WHERE id = 'A'", [[DOC]])
    assert [r.passed for r in _graded(env, [write], expected, query)] == [same, same]


def test_a_document_rewritten_in_another_key_order_is_no_change(env: SqliteEnvironment) -> None:
    """A tool that reads a document and writes it back in its own key order changed nothing
    a reviewer can see; another value inside it is a change."""
    same = 'UPDATE doc SET body = \'{"b":[1,2],"a":1}\''
    [result] = _graded(env, [same, A_CHANGED], _diff(EXPECT_A))
    assert result.passed, result.evidence["problems"]
    env.reset()
    other = 'UPDATE doc SET body = \'{"b":[1,2],"a":2}\''
    [result] = _graded(env, [other, A_CHANGED], _diff(EXPECT_A))
    assert result.evidence["problems"] == ["doc: unexpected change"]


@pytest.mark.parametrize(
    ("stored", "expected"),
    [("[1, 2", "[1,2"), ("[NaN]", "[NaN]"), ("{x}", "{x}")],
)
def test_text_that_is_no_json_document_stays_text(
    env: SqliteEnvironment,
    stored: str,
    expected: str,
) -> None:
    """Invalid JSON is compared as text, exactly: ``[1, 2`` is not ``[1,2``."""
    write = f"UPDATE acc SET note = '{stored}' WHERE id = 'A'"
    [result] = _graded(env, [write], _sql("SELECT note FROM acc WHERE id = 'A'", [[expected]]))
    assert result.passed is (stored == expected)


def test_json_text_never_matches_a_number_or_other_text() -> None:
    assert same_value("[1]", " [ 1 ]\n")
    assert not same_value("[1]", 1)
    assert not same_value("[1]", "[1")
    assert not same_value("1", 1)  # only objects and arrays are read as documents
    assert not same_value('"a"', "a")

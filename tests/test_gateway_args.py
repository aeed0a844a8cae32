"""The gateway's direct argument check never accepts what jsonschema refuses, and the
tool schemas ``@tool`` derives are all checked directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.gateway import _argument_check
from groundstate.spec.suite import load_suite

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

_simple_types = st.sampled_from(
    ["string", "integer", "number", "boolean", "null", "array", "object"]
)
_leaf = st.one_of(
    st.builds(lambda t: {"type": t}, _simple_types),
    st.just({}),
    st.just({"type": "string", "minLength": 2}),  # beyond the subset: left to jsonschema
    st.just({"type": ["string", "null"]}),
    st.just({"enum": [1, "a"]}),
    st.just({"type": "integer"}),
    st.just({"enum": ["a", ""], "type": "string"}),
    st.just({"enum": ["a", "1"]}),
)
_value_schema = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda i: {"items": i}, inner),
        st.builds(lambda o: {"anyOf": o, "default": None}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=4,
)
_names = st.sampled_from(["a", "b", "c"])
_schemas = st.builds(
    lambda props, required, closed: {
        "type": "object",
        "properties": props,
        "required": [n for n in required if n in props],
        **({} if closed is None else {"additionalProperties": closed}),
    },
    st.dictionaries(_names, _value_schema, max_size=3),
    st.lists(_names, max_size=3, unique=True),
    st.sampled_from([None, True, False]),
)
_tricky = st.sampled_from(
    [True, False, 0, 1, -1, 3.0, 1.5, "a", "1", "", None, [], [1], ["a"], [True], [None], {}]
)
_json = st.one_of(_tricky, st.lists(_tricky, max_size=3))
_args = st.dictionaries(st.sampled_from(["a", "a", "b", "c", "d"]), _json, max_size=3)


@settings(max_examples=600, deadline=None)
@given(_schemas, _args)
def test_plainly_valid_arguments_are_valid_to_jsonschema(schema: dict[str, Any], args: Any) -> None:
    if _argument_check(schema).plainly_valid(args):
        assert list(jsonschema.Draft202012Validator(schema).iter_errors(args)) == []


def test_the_example_tools_are_checked_directly_and_refusals_read_as_before() -> None:
    suite = load_suite(EXAMPLES / "retail")
    for tool in suite.tools.values():
        check = _argument_check(tool.parameters)
        assert check._direct is not None, tool.name
    refund = _argument_check(suite.tools["get_order"].parameters)
    assert not refund.plainly_valid({"order_id": 7})
    assert not refund.plainly_valid({})
    assert not refund.plainly_valid({"order_id": "#W1", "extra": 1})
    assert refund.plainly_valid({"order_id": "#W1"})
    assert [e.message for e in refund.errors({"order_id": 7})] == ["7 is not of type 'string'"]


def test_an_integral_float_is_left_to_jsonschema_which_accepts_it() -> None:
    check = _argument_check({"type": "object", "properties": {"n": {"type": "integer"}}})
    assert not check.plainly_valid({"n": 3.0}) and check.errors({"n": 3.0}) == []
    assert not check.plainly_valid({"n": True}) and check.errors({"n": True}) != []

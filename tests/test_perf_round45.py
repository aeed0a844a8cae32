"""Round 45 (perf): ``recordable`` tells the exact JSON types apart by ``type`` first.

The fast path must give what the ``isinstance`` walk gave for every value: the exact types
(str, dict, list, int, float, bool, None) and their subclasses, tuples, sets, and objects
it leaves alone; lone surrogates escaped wherever they are (a key, a nested item).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groundstate.records import CheckResult
from groundstate.trace import recordable

LONE = "\ud800"


class _Str(str):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


class _List(list):  # type: ignore[type-arg]
    pass


class _Int(int):
    pass


def _escaped_everywhere(value: Any) -> None:
    """Every string of *value* encodes as UTF-8 and no container but dict and list is left."""
    if isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, dict):
        assert type(value) is dict
        for key, item in value.items():
            _escaped_everywhere(key)
            _escaped_everywhere(item)
    else:
        assert not isinstance(value, tuple | set | frozenset)
        if isinstance(value, list):
            assert type(value) is list
            for item in value:
                _escaped_everywhere(item)


def test_lone_surrogates_escaped_in_keys_and_nested_items() -> None:
    value = {f"k{LONE}": [{"x": f"a{LONE}b"}, (LONE, 1)], "n": None, "f": 1.5, "b": True}
    out = recordable(value)
    assert out == {
        "k\\ud800": [{"x": "a\\ud800b"}, ["\\ud800", 1]],
        "n": None,
        "f": 1.5,
        "b": True,
    }
    _escaped_everywhere(out)


def test_subclasses_still_walked_and_escaped() -> None:
    out = recordable(_Dict({_Str(f"s{LONE}"): _List([_Str(LONE), _Int(3)])}))
    assert out == {"s\\ud800": ["\\ud800", 3]}
    _escaped_everywhere(out)
    plain = _Str("plain")
    assert recordable(plain) is plain  # an encodable string is kept as it is, subclass too


def test_scalars_and_unknown_objects_kept_as_they_are() -> None:
    marker = object()
    for value in (0, -1, 2.5, float("nan"), True, False, None, b"bytes", marker):
        assert recordable(value) is value
    # bool stays bool, int stays int (not 1 == True merged)
    assert [type(x) for x in recordable([True, 1, 1.0])] == [bool, int, float]


def test_containers_are_new_objects() -> None:
    inner = ["a"]
    value = {"k": inner}
    out = recordable(value)
    assert out == value and out is not value and out["k"] is not inner


def test_sets_sorted_by_text_whatever_their_order() -> None:
    assert recordable({"b", "a", "c"}) == ["a", "b", "c"]
    assert recordable(frozenset({3, 1, 2})) == [1, 2, 3]
    out = recordable({"b", LONE})
    assert sorted(out) == sorted(["b", "\\ud800"]) and out == _reference({"b", LONE})


def _reference(value: Any) -> Any:
    """The walk as it was before the fast path (round 44), for comparison."""
    from groundstate.returned import stable_repr
    from groundstate.trace import _encodable, _escaped

    if isinstance(value, str):
        return value if value.isascii() or _encodable(value) else _escaped(value)
    if isinstance(value, dict):
        return {_reference(key): _reference(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_reference(item) for item in value]
    if isinstance(value, set | frozenset):
        return [_reference(item) for item in sorted(value, key=stable_repr)]
    return value


_TEXT = st.text(alphabet=st.sampled_from(["a", "é", "\ud800", "\udfff", "😀", " "]), max_size=4)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    _TEXT,
    _TEXT.map(_Str),
    st.integers().map(_Int),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.lists(inner, max_size=4).map(_List),
        st.dictionaries(_TEXT, inner, max_size=4),
        st.dictionaries(_TEXT, inner, max_size=4).map(_Dict),
        st.frozensets(_TEXT, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_same_as_the_isinstance_walk(value: Any) -> None:
    out = recordable(value)
    expected = _reference(value)
    # the same text, down to each value's type (json.dumps keeps 1 and True apart)
    assert json.dumps(out) == json.dumps(expected)
    assert _types(out) == _types(expected)
    _escaped_everywhere(out)


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return [(type(k), _types(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_types(item) for item in value]
    return type(value)


def test_check_result_evidence_goes_through_the_walk() -> None:
    result = CheckResult.trusted("c", "never", False, {"quote": f"x{LONE}", "steps": (1, 2)})
    assert result.evidence == {"quote": "x\\ud800", "steps": [1, 2]}
    json.dumps(result.model_dump(mode="json")).encode("utf-8")

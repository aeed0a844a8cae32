"""Eighteenth round (records): what the harness turns into text for a record is the same in
every process and run. A returned value or evidence that is not JSON used to be stored as its
``repr``, with object addresses and a set's hash-seed order in it, so the same attempt's record
differed between an in-process and a process-pool run and between runs of one batch."""

from __future__ import annotations

import os
import subprocess
import sys

from groundstate.errors import ModelServingFailure
from groundstate.records import CheckResult
from groundstate.returned import AgentRaised, Final, stable_repr
from groundstate.trace import recordable

# Builds every awkward value, then prints the records the harness makes of each. Run in two
# fresh interpreters whose PYTHONHASHSEED differ: the outputs must be byte-identical.
_SCRIPT = r"""
import json, sys
from groundstate.errors import ModelServingFailure
from groundstate.records import CheckResult
from groundstate.returned import AgentRaised, Final

class Plain: pass
class Slotted:
    __slots__ = ("x",)
def f(): pass
class Addressed(Exception):
    def __str__(self): return f"failed on {object()!r} at {hex(id(self))}"

loop = []; loop.append(loop)
nested = {"d": {}}; nested["d"]["self"] = nested
names = [f"name{i}" for i in range(40)]
deep = ["deep"]
for _ in range(30):
    deep = [deep]
values = {
    "object": Plain(), "slotted": Slotted(), "function": f, "lambda": lambda: 0,
    "class": Plain, "method": Plain().__init__, "builtin": len, "module": json,
    "set": set(names), "frozenset": frozenset(names), "mixed set": {1, "a", (2, "b"), None},
    "set of objects": {Plain(), Plain()}, "sets in a list": [set("abcdef"), frozenset("xyz")],
    "dict views": {"k": {"a": 1}.keys(), "v": {"a": 1}.values(), "i": {"a": 1}.items()},
    "floats": [0.1 + 0.2, 1e300 * 10, float("nan"), -0.0, 1 / 3],
    "bytes": b"\x00\xffbytes", "bytearray": bytearray(b"ab"), "complex": 1 + 2j,
    "exception": ValueError(Plain()), "addressed": Addressed(), "generator": (i for i in "ab"),
    "recursion": loop, "recursive dict": nested, "huge int": 10 ** 5000,
    "huge list": list(range(5000)), "huge set": set(range(3000)) | set(names),
    "deep": deep,
    "surrogate set": {"\ud800", "ok"},
}
out = {}
for name, value in values.items():
    final = Final.of(value)
    raised = AgentRaised(ModelServingFailure("down", evidence={"value": value, "v2": [value]}))
    crash = AgentRaised(Addressed())
    check = CheckResult.trusted("c", "state", True, evidence={"value": value} if isinstance(
        value, (set, frozenset, list, dict)) and name not in (
        "recursion", "recursive dict", "dict views", "set of objects") else {"value": 1})
    out[name] = {
        "final": [final.text, final.odd_kind],
        "raised": [raised.message, raised.evidence, raised.traceback],
        "crash": [crash.message, crash.traceback[-1:]],
        "check": check.model_dump_json(),
    }
# A suite's Python check and constraint returning the same awkward evidence.
from types import SimpleNamespace
import groundstate.grading.outcome as outcome
import groundstate.grading.constraints._python as constraint
from groundstate.spec.task import PythonAssertion
grading = {k: v for k, v in values.items() if k not in ("recursion", "recursive dict", "huge int")}
grading["nested sets"] = {"s": {frozenset(names[:5]), frozenset(names[5:9])}}
outcome.call_check = constraint.call_check = lambda ref, states, *a: (False, dict(grading))
states = SimpleNamespace(s0=None, sT=None)
check = PythonAssertion(id="c", check="checks.py:f")
out["python check"] = outcome._python(check, states)
out["python constraint"] = constraint._run(
    check, SimpleNamespace(fresh=lambda: [], lend=lambda check: check([])), states)
sys.stdout.write(json.dumps(out, sort_keys=True))
"""


def _records_with_seed(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_records_are_byte_identical_across_processes_and_hash_seeds() -> None:
    first, second = _records_with_seed("1"), _records_with_seed("4242")
    assert first == second
    assert "0x7" not in first and " at 0x" not in first
    assert "<__main__.Plain object>" in first  # still says what it was
    assert '"python check": [false,' in first and '"python constraint": [false,' in first


def test_stable_repr_sorts_sets_and_ends_recursion_and_huge_values() -> None:
    assert stable_repr({"b", "a", "c"}) == "{'a', 'b', 'c'}"
    assert stable_repr(frozenset({2, 1})) == "frozenset({1, 2})"
    assert stable_repr(set()) == "set()"
    assert stable_repr((1,)) == "(1,)"
    loop: list[object] = []
    loop.append(loop)
    assert stable_repr(loop) == "[<recursion>]"
    assert stable_repr(list(range(2000))).endswith("... 1000 more]")
    assert stable_repr(10**5000) == "<int: repr() failed>"
    assert " at 0x" not in stable_repr(lambda: 0)
    assert stable_repr({"a": [1.5, b"x", None]}) == repr({"a": [1.5, b"x", None]})


def test_recordable_sorts_a_set_into_a_list() -> None:
    assert recordable({"evidence": {"z", "y"}}) == {"evidence": ["y", "z"]}
    assert recordable({3, 1, 2}) == [1, 2, 3]
    assert recordable({"k": frozenset({"b", "a"})}) == {"k": ["a", "b"]}


def test_verdicts_are_unchanged() -> None:
    assert Final.of(object()).odd_kind == "object"
    assert Final.of("text").text == "text"
    raised = AgentRaised(ModelServingFailure("down", evidence={"s": {"b", "a"}}))
    assert raised.reason == "environment_failure/model_serving"
    assert raised.evidence == {"s": "{'a', 'b'}"}
    check = CheckResult.trusted("c", "state", False, evidence={"s": {"b", "a"}})
    assert check.passed is False
    assert check.evidence == {"s": ["a", "b"]}

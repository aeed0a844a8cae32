"""The partial-credit rubric: a weighted tree of checks, reported beside ``Y``, never instead."""

from __future__ import annotations

from groundstate.records import CheckResult
from groundstate.spec.task import RubricNode


def partial_score(
    rubric: list[RubricNode], assertions: list[CheckResult], constraints: list[CheckResult]
) -> float | None:
    """Weighted mean over the tree; ``None`` when the task has no rubric."""
    if not rubric:
        return None
    passed = {f"a:{r.id}": r.passed for r in assertions} | {
        f"c:{r.id}": r.passed for r in constraints
    }
    return _mean(rubric, passed)


def _mean(nodes: list[RubricNode], passed: dict[str, bool]) -> float:
    total = sum(node.weight for node in nodes)
    return sum(node.weight * _node_score(node, passed) for node in nodes) / total


def _node_score(node: RubricNode, passed: dict[str, bool]) -> float:
    if node.children:
        return _mean(node.children, passed)
    key = f"a:{node.assertion}" if node.assertion is not None else f"c:{node.constraint}"
    return 1.0 if passed.get(key, False) else 0.0

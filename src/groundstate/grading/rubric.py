"""The partial-credit rubric: a weighted tree of checks, reported beside ``Y``, never instead."""

from __future__ import annotations

from groundstate.records import CheckResult
from groundstate.spec.task import RubricNode


def partial_score(
    rubric: list[RubricNode], assertions: list[CheckResult], constraints: list[CheckResult]
) -> float | None:
    """Weighted mean over the tree; ``None`` when the task has no rubric, or when a leaf's
    check could not be evaluated (a judge that failed to judge: its score is unknown, not 0)."""
    if not rubric:
        return None
    results = {f"a:{r.id}": r for r in assertions} | {f"c:{r.id}": r for r in constraints}
    if any(results[key].error is not None for key in _leaves(rubric) if key in results):
        return None
    return _mean(rubric, {key: result.passed for key, result in results.items()})


def _leaves(nodes: list[RubricNode]) -> list[str]:
    keys = []
    for node in nodes:
        if node.children:
            keys += _leaves(node.children)
        else:
            keys.append(_key(node))
    return keys


def _key(node: RubricNode) -> str:
    return f"a:{node.assertion}" if node.assertion is not None else f"c:{node.constraint}"


def _mean(nodes: list[RubricNode], passed: dict[str, bool]) -> float:
    total = sum(node.weight for node in nodes)
    return sum(node.weight * _node_score(node, passed) for node in nodes) / total


def _node_score(node: RubricNode, passed: dict[str, bool]) -> float:
    if node.children:
        return _mean(node.children, passed)
    return 1.0 if passed.get(_key(node), False) else 0.0

"""Probes that change an environment the way an agent could, and explain what a reset missed.

A reset is only proven against the kinds of change an attempt can leave behind: rows written
through the agent's own handle, the clock, and counters that survive deleting rows (SQLite's
AUTOINCREMENT, PostgreSQL's sequences). What a kind can change and count is its own business:
its ``probes`` (:class:`~groundstate.environments.base.ResetProbes`); the clock is common.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from groundstate.environments.base import (
    Environment,
    ResetProbes,
    Snapshot,
    diff_snapshots,
    in_tool_call,
    quote,
)
from groundstate.errors import ResetCheckFailed

CLOCK_STEP = 3600.0
"""Seconds the clock probe moves the clock forward."""

__all__ = [
    "CLOCK_STEP",
    "Observed",
    "explain",
    "in_tool_call",
    "mutate_like_an_agent",
    "observe",
    "quote",
    "unrestored_after_reset",
]


@dataclass(frozen=True)
class Observed:
    """What a reset must bring back: rows, the clock and the counters."""

    state_hash: str
    snapshot: Snapshot
    now: datetime
    counters: dict[str, int]

    def same(self, other: Observed) -> bool:
        """Whether *other* holds the same state, clock and counters."""
        return (self.state_hash, self.now, self.counters) == (
            other.state_hash,
            other.now,
            other.counters,
        )


def probes_of(env: Environment) -> ResetProbes | None:
    """The kind's reset probes, or None for a kind that offers none."""
    probes: ResetProbes | None = getattr(env, "probes", None)
    return probes


def observe(env: Environment) -> Observed:
    probes = probes_of(env)
    counters = probes.counters(env) if probes is not None else {}
    return Observed(env.state_hash(), env.snapshot(), env.now(), counters)


def explain(before: Observed, after: Observed) -> str:
    """Say which of rows, clock and counters differ between two observations."""
    parts = [
        f"rows of {name} differ ({len(t.added)} added, {len(t.removed)} removed, "
        f"{len(t.changed)} changed)"
        for name, t in diff_snapshots(before.snapshot, after.snapshot).tables.items()
    ]
    if before.now != after.now:
        parts.append(f"clock is {after.now.isoformat()}, not {before.now.isoformat()}")
    parts += [
        f"{name} is {after.counters.get(name)}, not {before.counters.get(name)}"
        for name in sorted(set(before.counters) | set(after.counters))
        if before.counters.get(name) != after.counters.get(name)
    ]
    return "; ".join(parts) or "other state differs (schema?)"


def mutate_like_an_agent(env: Environment) -> list[str]:
    """Change rows, the counters and the clock as an attempt could; say what changed.

    Writes go through the agent's handle inside tool calls, so the task's permissions apply:
    a table the agent may not write is left alone, as it would be in an attempt.
    """
    probes = probes_of(env)
    done = probes.mutate(env) if probes is not None else [f"no reset probes for {env.name}"]
    env.advance_clock(CLOCK_STEP)
    done.append(f"advanced the clock {CLOCK_STEP:g}s")
    return done


def unrestored_after_reset(
    env: Environment, built: str, before: Observed, *, seed: int
) -> str | None:
    """What a reset of *env* failed to bring back of *before* (the state hash *built*), or None.

    What reset left is read anew, not only the hash it returned: a kind whose hash leaves the
    clock out (a workspace's) or whose reset returns the hash it expects passed with the
    clock, counters or files left as the attempt had them."""
    try:
        restored = env.reset(seed=seed)
        gave = f"reset gave {restored[:12]}, not {built[:12]}"
    except ResetCheckFailed as exc:  # the kind's own check: say what it left, as below
        restored, gave = "", f"reset refused what it restored ({exc})"
    after = observe(env)
    if restored == built and before.same(after):
        return None
    if restored == built:
        gave = f"reset returned {built[:12]} but left another state"
    return f"{gave}: {explain(before, after)}"

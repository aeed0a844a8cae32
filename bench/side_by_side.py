"""Before and after figures in one run: a bench script measured in fresh processes on two
source trees, alternating, so that both see the same machine load (not a bench itself).

A script that uses it takes ``--against OTHER/src`` and ``--pairs N`` (:func:`add_options`),
prints its one measure as a JSON line under ``--json``, and compares with
:func:`alternate` over :func:`child`; one whose measure is a CPU figure per trace over some
passes, with a hash of what it found, is a :class:`PerTrace` (it prints both ways). The
bench folder is no package, so a script puts its own folder on ``sys.path`` to import this
one (tests load the scripts by path).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Runs = dict[str, list[dict[str, Any]]]
"""Each tree's ``src`` folder: its children's measures, in the order they ran."""


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--against", help="another tree's src folder, measured alternately")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)


def child(script: str, src: str, *args: str) -> dict[str, Any]:
    """*script* ``ARGS --json`` in a fresh process importing groundstate from *src*: the JSON
    object its last line prints."""
    out = subprocess.run(
        [sys.executable, script, *args, "--json"],
        env={**os.environ, "PYTHONPATH": src},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out.splitlines()[-1]))


def alternate(this: str, other: str, pairs: int, measure: Callable[[str], dict[str, Any]]) -> Runs:
    """*pairs* rounds of *measure* on *other*'s sources, then on *this* tree's."""
    runs: Runs = {this: [], other: []}
    for _ in range(pairs):
        for src in (other, this):
            runs[src].append(measure(src))
    return runs


def load_line() -> str:
    """The machine's load, printed under a comparison (a busy machine widens both)."""
    return f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}"


def _no_note(runs: list[dict[str, Any]]) -> str:
    return ""


@dataclass(frozen=True)
class PerTrace:
    """A bench whose ``measure(passes)`` gives ``ms_per_trace`` (CPU, median over the passes)
    and a hash of its findings under *digest*: alone it prints its counts and the figure;
    with ``--against`` each tree's median over the pairs, each pair's figure, and whether
    the findings are the same in both trees (a speed change must move none)."""

    script: str
    measure: Callable[[int], dict[str, Any]]
    counts: str
    """What one pass covers, formatted with a measure's fields: ``"{traces} traces"``."""
    what: str
    """The figure's name: ``"CPU ms per trace, ..."``."""
    digest: str
    """The measure's field holding the hash of its findings."""
    same: str
    """What that hash stands for, as the last line names it."""
    note: Callable[[list[dict[str, Any]]], str] = _no_note
    """More about one tree's runs, printed after its figures (``"; 3 failing"``)."""

    def compare(self, this: str, other: str, passes: int, pairs: int) -> None:
        runs = alternate(
            this, other, pairs, lambda src: child(self.script, src, "--passes", str(passes))
        )
        print(self.counts.format(**runs[this][0]))
        print(f"medians of {pairs} alternating pairs; {self.what}")
        for src in (other, this):
            median = statistics.median(r["ms_per_trace"] for r in runs[src])
            each = ", ".join(f"{r['ms_per_trace']:.3f}" for r in runs[src])
            print(f"  {median:7.3f}  ({each}{self.note(runs[src])})  {src}")
        same = {r[self.digest] for r in runs[this]} == {r[self.digest] for r in runs[other]}
        print(f"{self.same} the same in both trees: {same}")
        print(load_line())

    def main(self, doc: str) -> None:
        parser = argparse.ArgumentParser(description=doc.splitlines()[0])
        parser.add_argument("--passes", type=int, default=5, help="timed passes over the corpus")
        add_options(parser)
        args = parser.parse_args()
        if args.against:
            this = str(Path(self.script).resolve().parent.parent / "src")
            self.compare(this, str(Path(args.against).resolve()), args.passes, args.pairs)
        elif args.json:
            print(json.dumps(self.measure(args.passes)))
        else:
            found = self.measure(args.passes)
            print(self.counts.format(**found))
            print(f"{self.what}: {found['ms_per_trace']:.3f}")

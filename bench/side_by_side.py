"""Before and after figures in one run: a bench script measured in fresh processes on two
source trees, alternating, so that both see the same machine load (not a bench itself).

A script that uses it takes ``--against OTHER/src`` and ``--pairs N`` (:func:`add_options`),
prints its one measure as a JSON line under ``--json``, and compares with
:func:`alternate` over :func:`child`; the bench folder is no package, so a script puts
its own folder on ``sys.path`` to import this one (tests load the scripts by path).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
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

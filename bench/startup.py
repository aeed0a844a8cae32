"""How long ``groundstate --help`` and ``--version`` take (prints figures; not a test).

Each is run in a fresh interpreter several times; the median is printed beside a bare
``python -c pass``, the floor any Python command line pays. Target: under 0.3 s.

Run: ``make bench`` (or ``.venv/bin/python bench/startup.py``).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 7


def wall(args: list[str]) -> float:
    samples = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], stdout=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    print(f"\nstartup (median of {RUNS} fresh interpreters):")
    for label, args in (
        ("python -c pass", ["-c", "pass"]),
        ("groundstate --help", ["-m", "groundstate.cli", "--help"]),
        ("groundstate --version", ["-m", "groundstate.cli", "--version"]),
    ):
        print(f"  {label:<24} {wall(args) * 1000:7.0f} ms")


if __name__ == "__main__":
    main()

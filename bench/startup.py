"""How long ``groundstate --help`` and ``--version`` take (prints figures; not a test).

Each is run in a fresh interpreter several times; the median wall time is printed beside a
bare ``python -c pass``, the floor any Python command line pays, with the CPU time the child
used (on a busy machine wall time mostly measures the queue for a core). Target: under 0.3 s.

Run: ``make bench`` (or ``.venv/bin/python bench/startup.py``).
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time

RUNS = 7


def timed(args: list[str]) -> tuple[float, float]:
    """Median wall and CPU seconds of ``python *args`` in a fresh interpreter."""
    walls, cpus = [], []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, *args], stdout=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    print(f"\nstartup (median of {RUNS} fresh interpreters):")
    for label, args in (
        ("python -c pass", ["-c", "pass"]),
        ("groundstate --help", ["-m", "groundstate.cli", "--help"]),
        ("groundstate --version", ["-m", "groundstate.cli", "--version"]),
    ):
        wall, cpu = timed(args)
        print(f"  {label:<24} {wall * 1000:7.0f} ms wall {cpu * 1000:7.0f} ms CPU")


if __name__ == "__main__":
    main()

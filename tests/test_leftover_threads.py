"""What a thread left running (an agent past its limit, a helper it started) does while the
harness goes on: it must not break the harness's next step."""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

from groundstate.spec.code import siblings_importable


def test_a_thread_importing_meanwhile_does_not_break_loading_a_user_file(tmp_path: Path) -> None:
    """Loading a user file searched ``sys.modules`` while another thread could import: its
    size changed during the search and the load failed ("dictionary changed size during
    iteration"), once in a few full runs of the test suite. Here a thread adds and drops
    modules all along, with the interpreter switching threads as often as it can."""
    (tmp_path / "helpers.py").write_text("RATE = 1\n")
    stop = threading.Event()

    def imports() -> None:
        n = 0
        while not stop.is_set():
            sys.modules[f"_leftover_{n % 50}"] = types.ModuleType("leftover")
            sys.modules.pop(f"_leftover_{(n + 25) % 50}", None)
            n += 1

    thread = threading.Thread(target=imports, daemon=True)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    thread.start()
    try:
        for _ in range(100):
            with siblings_importable(tmp_path):
                assert "helpers" not in sys.modules or sys.modules["helpers"] is not None
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
        for n in range(50):
            sys.modules.pop(f"_leftover_{n}", None)

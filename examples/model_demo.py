"""``make demo-model``: the retail suite through the ``openai-chat`` adapter, offline.

A loopback server (``groundstate.testing.OpenAICompatibleServer``) speaks the Chat
Completions API and plays each task's oracle solution; every seventh request is rate-limited
first, so the report shows retried model calls. The real ``openai`` SDK client makes every
request; nothing leaves 127.0.0.1. Arguments after the script's name are passed to
``groundstate run`` (e.g. ``--attempts 2``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from groundstate.cli import main
from groundstate.spec.suite import load_suite
from groundstate.testing import Fail, OpenAICompatibleServer, solving_model

HERE = Path(__file__).parent
RATE_LIMITED_EVERY = 7


def demo(args: list[str]) -> int:
    play = solving_model(load_suite(HERE / "retail"))
    received = 0

    def model(request: dict[str, Any]) -> Any:
        nonlocal received
        received += 1
        if received % RATE_LIMITED_EVERY == 0:
            return Fail(429, "loopback demo: slow down", headers={"retry-after": "0"})
        return play(request)

    with OpenAICompatibleServer(model) as server:
        os.environ["GROUNDSTATE_OPENAI_BASE_URL"] = server.base_url
        os.environ.setdefault("OPENAI_API_KEY", "loopback-demo-key")
        command = ["run", str(HERE / "retail"), "--system"]
        command += [str(HERE / "systems" / "openai-compatible.yaml"), *args]
        try:
            main(command, standalone_mode=False)
        except SystemExit as exit_:
            return int(exit_.code or 0)
        print(f"the loopback model answered {received} requests", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(demo(sys.argv[1:]))

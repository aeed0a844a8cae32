"""``groundstate --help`` and ``--version`` start quickly: no heavy library is imported.

Each command module imports only ``click`` at the top and the library inside its commands;
a module that imports numpy or pydantic at the top would cost every invocation ~0.5 s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groundstate.cli import DEFAULT_STORE
from groundstate.store import DEFAULT_STORE as STORE_DEFAULT

HEAVY = ("numpy", "pydantic", "rich", "jinja2", "jsonschema", "yaml", "hypothesis", "asyncio")

PROBE = """
import sys
from groundstate.cli import main
try:
    main({args!r})
except SystemExit:
    pass
print(",".join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "args", [["--help"], ["--version"], ["run", "--help"], ["validate", "--help"]]
)
def test_help_and_version_import_no_heavy_library(args: list[str]) -> None:
    probe = PROBE.format(args=args, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip(), "nothing was printed"
    assert done.stderr.strip() == "", f"imported at startup: {done.stderr.strip()}"


def test_the_default_store_in_the_help_is_the_stores() -> None:
    assert Path(DEFAULT_STORE) == STORE_DEFAULT

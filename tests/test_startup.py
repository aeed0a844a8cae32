"""``groundstate --help`` and ``--version`` start quickly: no heavy library is imported.

Each command module imports only ``click`` at the top and the library inside its commands;
a module that imports numpy or pydantic at the top would cost every invocation ~0.5 s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from groundstate.cli import DEFAULT_STORE, diagnosis, interop, runs
from groundstate.diagnosis.verdicts import FIELDS
from groundstate.exports import ExportFormat
from groundstate.importers import FORMATS
from groundstate.stats import DEFAULT_FDR
from groundstate.store import DEFAULT_STORE as STORE_DEFAULT

from .conftest import EXAMPLES

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
    assert DEFAULT_STORE is STORE_DEFAULT  # one constant, in groundstate.paths


def test_the_choices_and_defaults_the_cli_spells_are_the_librarys() -> None:
    """Spelled in the command modules so that --help imports nothing heavy; kept in step here."""
    assert interop.IMPORT_FORMATS == FORMATS
    assert get_args(ExportFormat) == interop.EXPORT_FORMATS
    assert diagnosis.VERDICT_FIELDS == FIELDS
    assert runs.DEFAULT_FDR == DEFAULT_FDR


def test_python_dash_m_groundstate_is_the_cli() -> None:
    from groundstate import __version__

    done = subprocess.run(
        [sys.executable, "-m", "groundstate", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == f"groundstate, version {__version__}"


OPTIONAL = ("psycopg", "ray", "openai", "anthropic", "mcp", "playwright", "inspect_ai")
"""The optional extras' libraries: `make demo` installs none of them."""


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for both executors: the first run validates the tasks (without any extra),
    the second reuses its verdicts rather than prove them again."""
    return tmp_path_factory.mktemp("demo") / "runs.db"


@pytest.mark.parametrize("executor", ["in-process", "process"])
def test_the_demo_runs_and_reports_without_any_optional_extra(
    demo_store: Path, executor: str
) -> None:
    """`make demo` installs only the core dependencies: a batch on the retail example and its
    report must never import an extra's library (the executors once imported psycopg for a
    variable's name, and `make demo` failed on a fresh machine)."""
    store = str(demo_store)
    blocked = "".join(f"sys.modules[{name!r}] = None\n" for name in OPTIONAL)
    retail, careful = EXAMPLES / "retail", EXAMPLES / "systems" / "careful.yaml"
    run = ["run", str(retail), "--system", str(careful), "--attempts", "1", "--store", store]
    for args in ([*run, "--executor", executor, "-k", "refund", "--json"],
                 ["report", "--store", store, "--json"]):  # fmt: skip
        script = f"import sys\n{blocked}from groundstate.cli import main\nmain({args!r})\n"
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert "Traceback" not in done.stderr

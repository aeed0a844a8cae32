"""Other harnesses' result files, sixteenth round.

Harbor's provider errors (``harbor/agents/installed/base.py``: ``ERROR_PATTERNS`` over the
agent command's output), counts a file leaves out, and malformed files of each format; the
fixtures follow the writers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundstate.importers import ImportOptions, read_rows
from tests.test_imports_formats import Store, write_json
from tests.test_imports_harbor import trial


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


# --- Harbor: what the agent's own output says is not the harness's evidence -----------------


@pytest.mark.parametrize(
    "kind", ["AgentAuthenticationError", "ApiKeyRejectedError", "ModelNotFoundError",
             "ApiUsageLimitError"],
)  # fmt: skip
def test_a_harbor_provider_error_read_from_the_agents_output_follows_errors(
    store: Store, tmp_path: Path, kind: str
) -> None:
    """Harbor names these from the text of the agent's failed command ("Not logged in",
    "Cannot use this model", "Quota exceeded."): an agent that prints that text and exits
    non-zero made a failed attempt invalid, out of every denominator, whatever `--errors`
    said. Under the default `--errors agent` it is now the agent's crash, counted."""
    job = tmp_path / "job"
    job.mkdir()
    write_json(job / "result.json", {"id": "j", "n_total_trials": 2, "stats": {}})
    for name, exception in (("t__a", kind), ("t__b", None)):
        (job / name).mkdir()
        write_json(job / name / "result.json", trial("t", name, {"reward": 1.0}, exception))
    rows = read_rows(job, ImportOptions(format="harbor"))
    assert [(r.label, r.terminal_reason) for r in rows] == [
        ("t__a", "agent_failure/crashed"),
        ("t__b", "success"),
    ]
    report = store.report(store.imported(job))
    assert (report["valid_attempts"], report["invalid_attempts"]) == (2, 0)
    assert report["success_rate"]["estimate"] == 0.5  # the crash is in the denominator
    (row,) = read_rows(job / "t__a" / "result.json", ImportOptions(errors="environment"))
    assert row.terminal_reason.startswith("environment_failure/")

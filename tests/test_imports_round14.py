"""Other harnesses' result files and malformed input, fourteenth round.

Each case read a file otherwise than its harness wrote or meant it; the fixtures follow the
writers (Harbor's ``TrialResult``, Inspect's ``EvalSample`` and its events, Inspect's
multi-frame Zstandard members).
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


# --- Harbor --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("AgentAuthenticationError", "environment_failure/authentication"),
        ("ApiKeyRejectedError", "environment_failure/authentication"),
        ("ModelNotFoundError", "environment_failure/model_not_found"),
        ("ApiUsageLimitError", "environment_failure/usage_limit"),
    ],
)
def test_harbor_setup_errors_are_invalid_whatever_errors_says(
    tmp_path: Path, kind: str, reason: str
) -> None:
    """A rejected API key, a model the provider does not have, or an account out of quota
    stop the trial before the system is measured: under the default `--errors agent` each
    was an `agent_failure/crashed`, a job run with a bad key a batch of the agent's failures."""
    path = write_json(tmp_path / "result.json", trial("t", "t__a", {"reward": 0.0}, kind))
    for errors in ("agent", "environment"):
        (row,) = read_rows(path, ImportOptions(format="harbor", errors=errors))  # type: ignore[arg-type]
        assert (row.success, row.terminal_reason, row.reward) == (False, reason, None)
        assert row.origin is not None and row.origin["exception_type"] == kind

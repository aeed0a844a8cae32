"""Other harnesses' result files and malformed input, fourteenth round.

Each case read a file otherwise than its harness wrote or meant it; the fixtures follow the
writers (Harbor's ``TrialResult``, Inspect's ``EvalSample`` and its events, Inspect's
multi-frame Zstandard members).
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from groundstate.importers import ImportOptions, read_rows
from tests import test_imports_round13 as round13
from tests.test_imports_formats import Store, write_json
from tests.test_imports_harbor import trial

if sys.version_info >= (3, 14):
    from compression import zstd as zstd_codec
else:
    from backports import zstd as zstd_codec


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


# --- Inspect archives compressed with Zstandard --------------------------------------------


def frames(data: bytes) -> bytes:
    """*data* compressed as three Zstandard frames, as Inspect's writer splits a member (a
    frame per 200 MiB of input)."""
    third = len(data) // 3 + 1
    return b"".join(zstd_codec.compress(data[i : i + third]) for i in range(0, len(data), third))


def test_an_inspect_member_of_several_zstandard_frames_is_read(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``zipfile`` stops at the end of a member's first frame: every sample Inspect wrote
    over 200 MiB (several frames) was refused as a bad CRC-32."""
    monkeypatch.setattr(round13, "zstd_codec", SimpleNamespace(compress=frames))
    path = round13.zstd_log(tmp_path / "run.eval")
    assert [(r.task_id, r.terminal_reason) for r in read_rows(path)] == [
        ("1", "success"),
        ("2", "agent_failure/incorrect"),
    ]
    err = store.refused(round13.zstd_log(tmp_path / "bomb.eval", understate=10))
    assert "bomb.eval!" in err and "cannot read from the archive" in err and "CRC" in err
    damaged = round13.zstd_log(tmp_path / "damaged.eval", damage=True)
    assert "damaged.eval!" in store.refused(damaged)


@pytest.mark.parametrize(
    ("compress", "message"),
    [
        (lambda data: zstd_codec.compress(data)[:-6], "frame is cut short"),
        (lambda data: zstd_codec.compress(data[:-5]), "declared"),
        (lambda data: frames(data) + b"\x00garbage", "Unknown frame descriptor"),
    ],
)
def test_a_zstandard_member_cut_short_or_padded_is_named(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    compress: Any,
    message: str,
) -> None:
    """A member whose last frame ends early, that holds fewer bytes than it declares, or
    whose frames are followed by bytes that are no frame, is named with the member."""
    monkeypatch.setattr(round13, "zstd_codec", SimpleNamespace(compress=compress))
    err = store.refused(round13.zstd_log(tmp_path / "cut.eval"))
    assert "cut.eval!header.json: cannot read from the archive" in err
    assert message in err

"""``report`` and ``compare`` ask OpenBLAS for one thread, unless numpy is loaded or the user
chose a thread count."""

from __future__ import annotations

import os
import sys

import numpy  # noqa: F401  (loaded, as in a process that has already computed)
import pytest

from groundstate.cli.runs import _one_blas_thread


def test_one_thread_unless_chosen_or_too_late(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    _one_blas_thread()  # numpy is loaded in this process: too late to matter, left alone
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.delitem(sys.modules, "numpy")
    _one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.delenv("OPENBLAS_NUM_THREADS")
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    _one_blas_thread()
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    _one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3"

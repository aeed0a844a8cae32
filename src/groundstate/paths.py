"""Default locations, in a module of their own so that ``groundstate --help`` can name them
without importing the store (or anything heavy)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_STORE = Path(".groundstate/runs.db")
"""The run store a command uses when given no ``--store`` (artifacts go beside it)."""

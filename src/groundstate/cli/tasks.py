"""Commands that prove and lock suites (validate, lock, regress)."""

from __future__ import annotations

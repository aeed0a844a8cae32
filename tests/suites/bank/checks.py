"""Python outcome checks of the test bank."""

from __future__ import annotations

from typing import Any


def money_conserved(s0: Any, sT: Any) -> tuple[bool, dict[str, Any]]:
    before = s0.query("SELECT SUM(balance) FROM accounts")[0][0]
    after = sT.query("SELECT SUM(balance) FROM accounts")[0][0]
    return before == after, {"before": before, "after": after}


def broken(s0: Any, sT: Any) -> bool:
    raise ZeroDivisionError("grader bug")

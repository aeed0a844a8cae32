"""Python checks of the suite, named from a task as ``checks.py:function``.

An outcome check receives the evaluator's read-only views of the initial and final state and
returns a bool, or ``(bool, evidence)``; it never sees the agent's messages."""

from __future__ import annotations

from typing import Any


def no_due_date_earlier(s0: Any, sT: Any) -> tuple[bool, dict[str, Any]]:
    """No loan is due earlier than it was."""
    before = dict(s0.query("SELECT loan_id, due FROM loans"))
    earlier = [
        loan_id
        for loan_id, due in sT.query("SELECT loan_id, due FROM loans")
        if loan_id in before and due < before[loan_id]
    ]
    return not earlier, {"earlier": earlier}

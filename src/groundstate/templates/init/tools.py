"""The tools of the library desk. Schemas come from the type hints; descriptions from the
docstrings. A tool acts only through ``ctx.db`` (the agent's own connection) and refuses with
``ToolError``, which the agent sees as a refusal, never as a fault of the environment."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from groundstate import ToolContext, ToolError, tool

LOAN_DAYS = 14


@tool
def verify_member(ctx: ToolContext, card: str) -> dict[str, Any]:
    """Check a library card number; returns the member's card and name."""
    row = ctx.db.execute("SELECT card, name FROM members WHERE card = ?", (card,)).fetchone()
    if row is None:
        raise ToolError(f"no member with card {card!r}")
    return {"card": row[0], "name": row[1]}


@tool
def list_loans(ctx: ToolContext, card: str) -> list[dict[str, Any]]:
    """The loans of a member: id, title and due date."""
    rows = ctx.db.execute(
        "SELECT loan_id, title, due FROM loans WHERE card = ? ORDER BY loan_id", (card,)
    ).fetchall()
    return [{"loan_id": r[0], "title": r[1], "due": r[2]} for r in rows]


@tool
def renew_loan(ctx: ToolContext, card: str, title: str) -> dict[str, Any]:
    """Renew a member's loan of a title for 14 more days from today or its due date."""
    row = ctx.db.execute(
        "SELECT loan_id, due, renewals FROM loans WHERE card = ? AND title = ?", (card, title)
    ).fetchone()
    if row is None:
        raise ToolError(f"card {card!r} has no loan of {title!r}")
    start = max(date.fromisoformat(row[1]), ctx.now().date())
    due = (start + timedelta(days=LOAN_DAYS)).isoformat()
    ctx.db.execute(
        "UPDATE loans SET due = ?, renewals = renewals + 1 WHERE loan_id = ?", (due, row[0])
    )
    return {"loan_id": row[0], "card": card, "title": title, "due": due}

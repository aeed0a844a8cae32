"""Tools of the test bank."""

from __future__ import annotations

from typing import Any

from groundstate.errors import ToolError
from groundstate.tools import ToolContext, tool


@tool
def check_pin(ctx: ToolContext, account: str, pin: str) -> dict[str, Any]:
    """Check an account's PIN."""
    row = ctx.db.execute("SELECT pin FROM accounts WHERE id = ?", (account,)).fetchone()
    if row is None or row[0] != pin:
        raise ToolError("wrong account or PIN")
    return {"verified": True}


@tool
def balance(ctx: ToolContext, account: str) -> int:
    """An account's balance in cents."""
    row = ctx.db.execute("SELECT balance FROM accounts WHERE id = ?", (account,)).fetchone()
    if row is None:
        raise ToolError(f"no account {account}")
    return int(row[0])


@tool
def transfer(ctx: ToolContext, source: str, target: str, amount: int) -> dict[str, Any]:
    """Move money between accounts."""
    if amount <= 0:
        raise ToolError("amount must be positive")
    ctx.db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, source))
    ctx.db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, target))
    cur = ctx.db.execute(
        "INSERT INTO transfers (source, target, amount, at) VALUES (?, ?, ?, ?)",
        (source, target, amount, ctx.now().isoformat()),
    )
    return {"transfer_id": cur.lastrowid}


@tool
def read_audit(ctx: ToolContext) -> list[Any]:
    """Read the audit log (tasks forbid it)."""
    return [list(r) for r in ctx.db.execute("SELECT * FROM audit").fetchall()]


@tool
def explode(ctx: ToolContext) -> None:
    """A tool whose implementation is broken."""
    raise RuntimeError("the tool backend is down")


@tool
def opaque(ctx: ToolContext) -> object:
    """A tool that returns something that is not JSON (a bug in the tool)."""
    ctx.db.execute("UPDATE accounts SET balance = 0 WHERE id = 'A'")
    return object()

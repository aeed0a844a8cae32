from typing import Any

from groundstate.errors import ToolError
from groundstate.tools import ToolContext, tool


@tool
def verify_badge(ctx: ToolContext, employee_id: str, badge: str) -> dict[str, Any]:
    """Check an employee's badge number; returns the employee."""
    row = ctx.db.execute(
        "SELECT id, name, badge FROM employees WHERE id = ?", (employee_id,)
    ).fetchone()
    if row is None or row[2] != badge:
        raise ToolError("badge does not match")
    return {"employee_id": row[0], "name": row[1]}


@tool
def find_free_rooms(ctx: ToolContext, day: str, slot: int) -> list[str]:
    """List rooms free on a day (YYYY-MM-DD) at an hour slot (8-18)."""
    rows = ctx.db.execute(
        "SELECT id FROM rooms WHERE id NOT IN"
        " (SELECT room FROM bookings WHERE day = ? AND slot = ?) ORDER BY id",
        (day, slot),
    ).fetchall()
    return [r[0] for r in rows]


@tool
def book_room(ctx: ToolContext, employee_id: str, room: str, day: str, slot: int) -> dict[str, Any]:
    """Book a room for an employee at a day and hour slot."""
    if not 8 <= slot <= 18:
        raise ToolError("slot must be between 8 and 18")
    if ctx.db.execute("SELECT 1 FROM rooms WHERE id = ?", (room,)).fetchone() is None:
        raise ToolError(f"no room {room}")
    if ctx.db.execute("SELECT 1 FROM employees WHERE id = ?", (employee_id,)).fetchone() is None:
        raise ToolError(f"no employee {employee_id}")
    if ctx.db.execute(
        "SELECT 1 FROM bookings WHERE room = ? AND day = ? AND slot = ?", (room, day, slot)
    ).fetchone():
        raise ToolError("room already booked")
    cur = ctx.db.execute(
        "INSERT INTO bookings (room, employee, day, slot, created_at) VALUES (?, ?, ?, ?, ?)",
        (room, employee_id, day, slot, ctx.now().isoformat()),
    )
    return {"booking_id": cur.lastrowid}


@tool
def cancel_booking(ctx: ToolContext, booking_id: int) -> str:
    """Cancel a booking by its id."""
    cur = ctx.db.execute("DELETE FROM bookings WHERE id = ?", (booking_id,))
    if cur.rowcount == 0:
        raise ToolError(f"no booking {booking_id}")
    return "cancelled"

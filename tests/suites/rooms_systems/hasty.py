async def agent(session) -> str:
    if "cancel" in session.user_request:
        await session.call("cancel_booking", {"booking_id": 1})
        return "Done."
    await session.call(
        "book_room", {"employee_id": "E1", "room": "R-A", "day": "2026-01-16", "slot": 9}
    )
    return "Booked."

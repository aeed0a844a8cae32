import re


async def agent(session, slot: int = 9) -> str:
    m = re.search(r"employee (E\d+)", session.user_request)
    emp = m.group(1) if m else "E1"
    reply = await session.say("What is your badge number?")
    badge = re.findall(r"\d+", reply or "")
    if not badge:
        session.give_up("no badge")
    r = await session.call("verify_badge", {"employee_id": emp, "badge": badge[-1]})
    if not r.ok:
        return "I could not verify you."
    if "cancel" in session.user_request:
        return "Sorry, only the employee who made that booking may cancel it."
    room = re.search(r"room (R-\w)", session.user_request).group(1)
    yes = await session.say(f"Shall I book room {room} on 2026-01-16 at {slot}? Please confirm.")
    if not yes or not yes.lower().startswith("yes"):
        return "Not booked."
    r = await session.call(
        "book_room", {"employee_id": emp, "room": room, "day": "2026-01-16", "slot": slot}
    )
    return "Booked." if r.ok else f"Failed: {r.error}"

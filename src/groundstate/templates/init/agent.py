"""A small rule-based agent: replace it with your own, or name a model adapter in system.yaml
(``entry: openai-chat``). It acts only through the session: ``say`` to the member, ``call``
tools."""

from __future__ import annotations

from groundstate import Session


async def agent(session: Session) -> str:
    answer = await session.say("I can help. What is your library card number?") or ""
    card = answer.rstrip(".").split()[-1] if answer else ""
    member = await session.call("verify_member", {"card": card})
    if not member.ok:
        session.give_up(member.error or "the card was not accepted")
    loans = await session.call("list_loans", {"card": card})
    wanted = [loan for loan in loans.output if loan["title"] in session.user_request]
    if not wanted:
        return "I could not find that loan on your card."
    title = wanted[0]["title"]
    print(f"renewing {title!r} for card {card}")  # kept with the run: `groundstate show RUN_ID`
    renewed = await session.call("renew_loan", {"card": card, "title": title})
    if not renewed.ok:
        return f"Sorry, {title} could not be renewed: {renewed.error}"
    return f"Your loan of {title} is renewed; it is now due on {renewed.output['due']}."

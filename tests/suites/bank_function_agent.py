"""An agent written as a coroutine function, named directly by a system file."""

from __future__ import annotations

from typing import Any


async def transfer_agent(session: Any, amount: int = 30) -> str:
    await session.say("What is your PIN?")
    await session.call("check_pin", {"account": "A", "pin": "1234"})
    await session.call("transfer", {"source": "A", "target": "B", "amount": amount})
    return "done"

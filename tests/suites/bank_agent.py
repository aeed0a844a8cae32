"""A reference agent for the test bank: verifies the PIN, then transfers; faults are seeded."""

from __future__ import annotations

from typing import Any


class BankAgent:
    def __init__(self, fault_rate: float = 0.0, delay: float = 0.0) -> None:
        self.fault_rate = fault_rate
        self.delay = delay

    async def run(self, session: Any) -> str:
        import asyncio

        if self.delay:
            await asyncio.sleep(self.delay)
        if session.rng.random() >= self.fault_rate:
            await session.say("What is your PIN?")
            await session.call("check_pin", {"account": "A", "pin": "1234"})
        await session.call("transfer", {"source": "A", "target": "B", "amount": 30})
        return "Moved 30 from A to B."


def bank_agent(**params: Any) -> BankAgent:
    return BankAgent(**params)

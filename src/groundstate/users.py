"""Simulated users. A simulated user is part of the instrument, so its behaviour is pinned.

The scripted user answers each agent message by fixed rules, in order:

1. once the agent has sent ``max_turns`` messages, the user has left (reply ``None``);
2. each private fact whose name (underscores read as spaces, e.g. "zip code") appears in the
   message is revealed: "My zip code is 94107.";
3. a message asking to "confirm", "go ahead" or "proceed" gets "Yes, please go ahead." when the
   task's user confirms, else "No, please do not do that.";
4. a message containing "anything else" gets "No, that's all. Thank you!" and the user leaves;
5. anything else gets "Sorry, I'm not sure what you mean."
"""

from __future__ import annotations

from groundstate.spec.system import UserSimulatorSection
from groundstate.spec.task import UserScenario

CONFIRM_WORDS = ("confirm", "go ahead", "proceed")
YES = "Yes, please go ahead."
NO = "No, please do not do that."
GOODBYE = "No, that's all. Thank you!"
UNSURE = "Sorry, I'm not sure what you mean."


class ScriptedUser:
    def __init__(self, spec: UserSimulatorSection, scenario: UserScenario) -> None:
        self._spec = spec
        self._scenario = scenario
        self._turns = 0
        self.left = False

    def reply(self, message: str) -> str | None:
        self._turns += 1
        if self.left or self._turns > self._spec.max_turns:
            self.left = True
            return None
        text = message.lower()
        revealed = [
            f"My {key.replace('_', ' ')} is {value}."
            for key, value in self._scenario.knowledge.items()
            if key.replace("_", " ").lower() in text
        ]
        if revealed:
            return " ".join(revealed)
        if any(word in text for word in CONFIRM_WORDS):
            return YES if self._scenario.confirms else NO
        if "anything else" in text:
            self.left = True
            return GOODBYE
        return UNSURE

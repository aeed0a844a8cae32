"""The per-step path made cheaper behaves as before: agents built from a resolved entry, tool
calls recorded without a second validation pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundstate.agents.python import FunctionAgent, load_agent
from groundstate.errors import SpecError
from groundstate.spec.system import load_system

AGENTS = """
import itertools

BUILT = itertools.count()


async def replay(session, word="hi"):
    return word


class Counting:
    def __init__(self, word="hi"):
        self.number = next(BUILT)
        self.word = word

    async def run(self, session):
        return self.word


def refusing(word="hi"):
    raise TypeError("no agent today")
"""


def _system(folder: Path, entry: str, params: dict[str, str] | None = None) -> Path:
    (folder / "agents.py").write_text(AGENTS)
    path = folder / f"system-{entry}.yaml"
    loop = {"entry": f"agents.py:{entry}", "params": params or {}}
    path.write_text(f"name: s\nharness:\n  orchestration_loop: {loop!r}\n")
    return path


def test_a_factory_is_called_for_every_agent_of_one_spec(tmp_path: Path) -> None:
    system = load_system(_system(tmp_path, "Counting", {"word": "yo"}))
    first, second = load_agent(system), load_agent(system)
    assert first is not second  # no agent's state reaches the next
    assert second.number == first.number + 1  # type: ignore[attr-defined]
    assert second.word == "yo"  # type: ignore[attr-defined]


def test_a_coroutine_entry_gives_a_new_agent_with_its_params_each_time(tmp_path: Path) -> None:
    system = load_system(_system(tmp_path, "replay", {"word": "yo"}))
    first, second = load_agent(system), load_agent(system)
    assert isinstance(first, FunctionAgent) and isinstance(second, FunctionAgent)
    assert first is not second
    assert second.fn.keywords == {"word": "yo"}  # type: ignore[attr-defined]


def test_a_refusing_factory_is_a_spec_error_every_time(tmp_path: Path) -> None:
    system = load_system(_system(tmp_path, "refusing"))
    for _ in range(2):
        with pytest.raises(SpecError, match="no agent today"):
            load_agent(system)


def test_a_bad_entry_is_refused_every_time_and_a_spec_loaded_again_sees_an_edit(
    tmp_path: Path,
) -> None:
    path = _system(tmp_path, "replay", {"unknown": "x"})
    for _ in range(2):  # refused as the system loads (fiftieth round)
        with pytest.raises(SpecError, match="unknown"):
            load_agent(load_system(path))
    good = load_system(_system(tmp_path, "replay"))
    assert load_agent(good).fn.keywords == {}  # type: ignore[attr-defined]
    (tmp_path / "agents.py").write_text(AGENTS.replace('word="hi"', 'word="edited"'))
    edited = load_agent(load_system(tmp_path / "system-replay.yaml"))
    assert edited.fn.func.__defaults__ == ("edited",)  # type: ignore[attr-defined]

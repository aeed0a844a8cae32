"""The public surface: a complete ``__all__``, and every CLI command documented."""

from __future__ import annotations

import types
from pathlib import Path

import click

import groundstate
from groundstate.cli import main

README = Path(__file__).parent.parent / "README.md"


def test_all_is_complete_and_importable() -> None:
    public = {  # dir(): names are imported on first use, so vars() lists only those used
        name
        for name in dir(groundstate)
        if not name.startswith("_") and not isinstance(getattr(groundstate, name), types.ModuleType)
    }
    assert set(groundstate.__all__) == public
    assert all(getattr(groundstate, name) is not None for name in groundstate.__all__)


def _commands(group: click.Group, prefix: str = "groundstate") -> list[str]:
    names = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            names += _commands(command, f"{prefix} {name}")
        else:
            names.append(f"{prefix} {name}")
    return names


def test_every_command_is_documented_in_the_readme() -> None:
    text = README.read_text()
    commands = _commands(main)
    assert len(commands) >= 9
    missing = [c for c in commands if f"`{c}" not in text]
    assert missing == []


def test_readme_opens_with_the_two_commands() -> None:
    head = README.read_text().split("\n## ")[0]
    assert "make demo" in head and "make test" in head

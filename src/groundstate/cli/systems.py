"""Commands on system files."""

from __future__ import annotations

from pathlib import Path

import click

from groundstate.cli import main


@main.group()
def system() -> None:
    """Inspect system files."""


@system.command("hash")
@click.argument("file", type=click.Path(path_type=Path))
def system_hash(file: Path) -> None:
    """Print the canonical sha256 of the system in FILE."""
    from groundstate.spec.system import load_system

    click.echo(load_system(file).system_spec_hash)

"""``verify``, and the checks ``report``, ``show`` and ``compare`` make on what they read.

Reading commands verify the batch they show (records, artifacts read back, chain) and print one
warning line per altered or missing record on stderr; they still render, mark the output as
altered, and exit 1, so a script cannot take tampered numbers for a verdict. ``report`` and
``compare`` rely on a batch's seal while it holds (:mod:`groundstate.seal`); ``verify``
always checks in full.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from groundstate.cli import STORE_OPTION, main, said
from groundstate.rounding import counted

if TYPE_CHECKING:
    from groundstate.store import Verification

EXIT_ALTERED = 1
"""Exit status when anything read is altered or missing (2 stays a user error)."""


@main.command()
@click.argument("batch_id", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print what was checked as JSON.")
@STORE_OPTION
def verify(batch_id: str | None, as_json: bool, store: Path) -> None:
    """Check every record and artifact of BATCH_ID (default: every batch) against its hashes.

    Names each record or label altered, unreadable or missing, each artifact deleted or
    edited, and each break in a batch's chain or labels chain; exit 0 when everything
    verifies, 1 otherwise. Records written before store format 2 have no hashes: they are
    listed as unverifiable, not altered. Always a full check: it neither trusts nor writes
    the seal ``report`` and ``compare`` use.

    Prints each batch's chain head: keep it elsewhere. A store rolled back to an older copy,
    or whose last records were deleted with the head rewound, verifies; its head differs.
    """
    from groundstate.store import RunStore

    with RunStore(store, create=False) as run_store:
        ids = [run_store.batch_id_for(batch_id)] if batch_id is not None else run_store.batch_ids()
        checks = [run_store.verify(b) for b in ids]
        edits = run_store.hand_edits()
    if as_json:
        click.echo(json.dumps([_check_json(c) for c in checks], indent=2))
    else:
        for check in checks:
            _print_check(check)
        broken = sum(not c.ok for c in checks)
        click.echo(
            f"{counted(len(checks), 'batch', 'batches')} checked: "
            + (f"{broken} altered or incomplete" if broken else "all verify")
        )
        if edits:  # what no hash shows: a whole batch's runs deleted with its chain head
            click.echo(
                f"note: the store's edits log holds {edits} UPDATE or DELETE of run or batch "
                "rows; groundstate makes none (hand edits: `SELECT * FROM edits` in the store "
                "lists them)"
            )
    if any(not c.ok for c in checks):
        sys.exit(EXIT_ALTERED)


def _print_check(check: Verification) -> None:
    status = "ok" if check.ok else "ALTERED"
    click.echo(
        f"batch {check.batch_id}: {counted(check.records, 'record')}, "
        f"{counted(check.artifacts, 'artifact')}: {status}"
    )
    for problem in check.problems:
        click.echo(f"  {said(f'{problem.kind}: {problem.line()}')}")
    if check.chain_head is not None:  # an outside anchor: a rolled-back store shows another
        click.echo(f"  chain head: {check.chain_head}")


def _check_json(check: Verification) -> dict[str, object]:
    return {
        "batch_id": check.batch_id,
        "records": check.records,
        "artifacts": check.artifacts,
        "verified": check.ok,
        "check": check.check,
        "chain_head": check.chain_head,
        "problems": [p.model_dump() for p in check.problems],
    }


def warn(check: Verification, run_id: str | None = None) -> bool:
    """Print one line per problem (of *run_id* and its batch, if given) on stderr; return
    whether anything is altered or missing."""
    problems = check.for_run(run_id) if run_id else check.problems
    for problem in problems:
        label = "note" if problem.kind == "unverifiable" else "warning"
        click.echo(said(f"{label}: {problem.line()}"), err=True)
    return any(p.altered for p in problems)


def integrity_json(check: Verification, run_id: str | None = None) -> dict[str, object]:
    problems = check.for_run(run_id) if run_id else check.problems
    return {
        "verified": not any(p.altered for p in problems),
        "problems": [p.line() for p in problems],
        "check": check.check,
        "sealed_at": check.sealed_at.isoformat() if check.sealed_at else None,
        "sealed_by": check.sealed_by,
    }

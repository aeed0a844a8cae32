"""Twenty-first validation audit: near misses "killed" by a stop, not the grader, and figures
printed with Python's own formats.

A task whose ``step_limit`` is the oracle's length stopped every mutant that adds a step (a
repeated write) at the limit, and that stop counted as a kill: a grader counting no transfers
scored 1.00. The printing cases: a mutation score below 1 shown as "100%" or "1.00", a kappa
just below its bound shown as the bound, a threshold or an option echoed by Python's rounding.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from rich.console import Console

from groundstate.cli.diagnosis import _print_plan
from groundstate.cli.tasks import _cell
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.report.numbers import declared_share, fraction, given, share
from groundstate.spec.suite import Suite, load_suite
from groundstate.spec.task import AgentTask
from groundstate.validation import mutation as mutation_module
from groundstate.validation.checks import check_reset
from groundstate.validation.judges import JudgeAgreement, _verdict
from groundstate.validation.mutation import PAST_LIMITS, mutation_test, summary
from groundstate.validation.replay import Proof
from groundstate.validation.results import CheckOutcome, ClassCounts, MutationFigures, TaskValidity

from .conftest import BANK

REPEAT = "repeat:step3:transfer"
"""The oracle's transfer made twice: one step longer than the oracle."""
LENIENT = [
    {
        "id": "moved",
        "sql": "SELECT COUNT(*) > 0 FROM transfers "
        "WHERE source = 'A' AND target = 'B' AND amount = 30",
        "expect_rows": [[1]],
    },
    {
        "id": "a-paid",
        "sql": "SELECT balance <= 70 FROM accounts WHERE id = 'A'",
        "expect_rows": [[1]],
    },
]
"""Outcome assertions that accept two transfers as well as one."""


def _bank(tmp_path: Path, *, step_limit: int, one_transfer: bool, lenient: bool) -> Suite:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    task_file = root / "tasks" / "transfer.yaml"
    task: dict[str, Any] = yaml.safe_load(task_file.read_text())
    if not one_transfer:
        task["hard_process_constraints"] = [
            c for c in task["hard_process_constraints"] if c["id"] != "one-transfer"
        ]
    if lenient:
        task["outcome_assertions"] = LENIENT
        task.pop("partial_credit_rubric", None)
    task["step_limit"] = step_limit
    task_file.write_text(yaml.safe_dump(task))
    return load_suite(root)


def _figures(suite: Suite) -> MutationFigures:
    return mutation_test(Proof(suite, suite.tasks["transfer"]))


# --- a stop is no kill -------------------------------------------------------------------------


def test_a_mutant_stopped_by_the_step_limit_is_graded_past_it(tmp_path: Path) -> None:
    """The step limit is the oracle's length: the repeated transfer is stopped at the limit.
    The grader accepts two transfers, so the mutant survives, named with why."""
    figures = _figures(_bank(tmp_path, step_limit=3, one_transfer=False, lenient=True))
    survivors = {s.id: s for s in figures.survivors}
    assert REPEAT in survivors, summary(figures)
    assert PAST_LIMITS in survivors[REPEAT].description
    assert figures.per_class["repeat"] == ClassCounts(generated=1, survived=1)
    assert figures.score is not None and figures.score < 1


def test_the_same_mutant_is_killed_when_the_grader_catches_it(tmp_path: Path) -> None:
    """Control: with the task's own one-transfer constraint, the repeated transfer replayed
    past the limit fails by that constraint, and counts as killed."""
    figures = _figures(_bank(tmp_path, step_limit=3, one_transfer=True, lenient=True))
    assert REPEAT not in {s.id for s in figures.survivors}
    assert figures.per_class["repeat"] == ClassCounts(generated=1, killed=1)


def test_a_roomy_step_limit_gives_the_same_survivor(tmp_path: Path) -> None:
    """Control: the verdict no longer depends on the step limit (the plain survivor carries no
    note about limits)."""
    figures = _figures(_bank(tmp_path, step_limit=6, one_transfer=False, lenient=True))
    survivors = {s.id: s for s in figures.survivors}
    assert REPEAT in survivors and PAST_LIMITS not in survivors[REPEAT].description


def test_a_mutant_still_stopped_past_the_limits_has_no_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay stopped again (here: the lifted step limit is kept at 3 too) is neither killed
    nor surviving."""
    monkeypatch.setattr(mutation_module, "MAX_STEPS", 3)
    figures = _figures(_bank(tmp_path, step_limit=3, one_transfer=False, lenient=True))
    errored = {r.id: r for r in figures.errored}
    assert REPEAT in errored and "step_limit" in (errored[REPEAT].reason or "")
    assert figures.per_class["repeat"] == ClassCounts(generated=1, errors=1)


# --- figures printed with the project's rounding --------------------------------------------


def _scored(killed: int, generated: int) -> MutationFigures:
    return MutationFigures(
        generated=generated,
        killed=killed,
        errors=0,
        per_class={"arg": ClassCounts(generated=generated, killed=killed)},
        survivors=[],
    )


def _validity(figures: MutationFigures) -> TaskValidity:
    check = CheckOutcome(name="mutation", passed=True, detail="")
    return TaskValidity(task_id="t", checks=[check], mutation=figures, settled=True)


@pytest.mark.parametrize(
    ("killed", "generated", "cell", "score"),
    [
        (249, 250, ">99%", ">0.99"),  # 0.996: Python's .0% printed "100%", decimals "1.00"
        (250, 250, "100%", "1.00"),
        (1, 250, "<1%", "<0.01"),  # 0.004: "0%" and "0.00" said none was killed
        (9, 12, "75%", "0.75"),
        (7, 16, "44%", "0.44"),
    ],
)
def test_a_mutation_score_below_1_never_prints_as_all(
    killed: int, generated: int, cell: str, score: str
) -> None:
    figures = _scored(killed, generated)
    validity = _validity(figures)
    assert _cell(validity, validity.checks[0]) == cell
    assert summary(figures).startswith(f"score {score}: {killed} of {generated} mutants killed")


def test_a_kappa_just_below_its_bound_is_printed_apart_from_it() -> None:
    assertion = SimpleNamespace(id="polite", min_agreement=0.7)
    found = JudgeAgreement(assertion_id="polite", items=40, kappa=0.6996, raw=0.9996, errors=[])
    passed, line = _verdict(assertion, found)  # type: ignore[arg-type]
    assert not passed
    assert "kappa 0.6996 (min 0.7)" in line and "raw agreement >0.999" in line, line
    found = JudgeAgreement(assertion_id="polite", items=40, kappa=0.8125, raw=0.9, errors=[])
    passed, line = _verdict(assertion, found)  # type: ignore[arg-type]
    assert passed and "kappa 0.813 (min 0.7), raw agreement 0.900" in line, line


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0125, "1.25%"), (0.1, "10.0%"), (0.05, "5.0%"), (0.00125, "0.125%"), (1.0, "100.0%")],
)
def test_a_declared_threshold_prints_as_declared(value: float, text: str) -> None:
    assert declared_share(value) == text


def test_a_flagged_share_and_its_threshold_print_on_their_own_sides() -> None:
    """The footer's pair: the share kept apart from the threshold and the threshold as
    declared (``.1%`` printed 0.0125 as "1.2%": "1.26% > 1.2%" read as a lower bound)."""
    from groundstate.report.numbers import share_apart

    assert f"{share_apart(0.0126, 0.0125)} > {declared_share(0.0125)}" == "1.26% > 1.25%"


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.1234567, "0.1234567"), (0.05, "0.05"), (0.8, "0.8"), (0.15, "0.15"), (1e-05, "1e-05")],
)
def test_an_option_is_echoed_as_given(value: float, text: str) -> None:
    assert given(value) == text


def test_plan_echoes_delta_power_and_alpha_as_given() -> None:
    """``plan``'s table title echoed ``--delta 0.1234567`` as "0.123457" (``:g``)."""
    component = SimpleNamespace(
        n_tasks=12, attempts=4.0, mean=0.5, between=0.01, within=0.2, icc=0.05, design_effect=1.2
    )
    result = SimpleNamespace(
        components=[component],
        difference=SimpleNamespace(
            paired_pilot=False, between=0.01, within=0.2, weight_inflation=1.0
        ),
        delta=0.1234567,
        power=0.8125,
        alpha=0.0125,
        tasks_needed={1: 10},
        power_grid={10: {1: 0.5}},
        marginal=SimpleNamespace(
            tasks=12,
            attempts=4,
            one_more_attempt=0.001,
            per_run_attempt=0.0001,
            one_more_task=0.002,
            per_run_task=0.0001,
            better="task",
        ),
        warnings=[],
    )
    console = Console(width=200, record=True)
    _print_plan(console, result)  # type: ignore[arg-type]
    text = console.export_text()
    assert "detect 0.1234567 with power 0.8125" in text, text
    assert "two-sided alpha 0.0125" in text, text


def test_the_report_helpers_keep_their_defaults() -> None:
    """Control: the reports' three-decimal rates and one-decimal shares are unchanged."""
    assert fraction(0.9996) == ">0.999" and fraction(0.0004) == "<0.001"
    assert share(0.9996) == ">99.9%" and share(0.0004) == "<0.1%"
    assert fraction(9 / 16) == "0.563" and share(0.5) == "50.0%"


# --- a reset that follows the seed -----------------------------------------------------------


class SeededState(SqliteEnvironment):
    """Reset builds the fixture, then moves as much money as the seed says (mod 7): the state
    a proof (seed 0) sees is not the one other attempts start from."""

    def reset(self, *, seed: int | None = None) -> str:
        digest = super().reset(seed=seed)
        if not seed or not seed % 7:
            return digest
        with self.tool_transaction():
            self.agent_db.execute(
                "UPDATE accounts SET balance = balance + ? WHERE id = 'C'", (seed % 7,)
            )
        return self.state_hash()


def _made(cls: type[SqliteEnvironment]) -> Any:
    def make(task: AgentTask, suite: Suite) -> SqliteEnvironment:
        return cls(suite.fixture_path(task), clock=task.clock, permissions=task.permissions)

    return make


def test_a_reset_whose_state_follows_the_seed_is_refused() -> None:
    suite = load_suite(BANK)
    reset = check_reset(Proof(suite, suite.tasks["transfer"], _made(SeededState)))
    assert not reset[0]
    assert "a reset with seed 1 gives state" in reset[1] and "(seed 0)" in reset[1], reset[1]


def test_a_reset_the_same_for_every_seed_passes() -> None:
    """Control: the kind itself ignores the seed (and the check leaves the seed-0 state)."""
    suite = load_suite(BANK)
    passed, detail = check_reset(Proof(suite, suite.tasks["transfer"], _made(SqliteEnvironment)))
    assert passed and "seed" not in detail, detail

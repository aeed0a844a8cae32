"""The τ² import under malformed or unusual data, and the converted tasks' faithfulness to τ²
(second-round audit).

Malformed files: duplicate or colliding task ids, ids that cannot name a file, gold actions
whose arguments have other types, database records of the wrong shape, what τ² grades or sets
up that the conversion cannot state (``initial_state``, environment assertions, an ``ACTION``
or state-free reward basis). Faithfulness, on the shared retail data: τ²'s own gold actions
reach the converted task's expected state, a deviation τ²'s database check fails fails here,
and ``communicate_info`` is graded exactly where τ² grades it.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import SpecError
from groundstate.spec.solution import Step
from groundstate.spec.suite import load_suite
from groundstate.tau2 import ImportOptions, ImportReport, import_tau2
from groundstate.tau2.convert import CLOCK
from groundstate.tau2.policy import info_pattern
from groundstate.tau2.replay import call as replay_call
from groundstate.tau2.retail_checks import WRITE_TOOLS
from groundstate.tau2.source import Action
from groundstate.testing import run_solution
from groundstate.tools import load_tools
from tests.test_tau2 import AUTH, DB, POLICY, TASKS, _task
from tests.test_tau2_suite import DATA

FAST = ImportOptions(mutation_testing="off", tool_robustness="off")
CANCEL = ("cancel_pending_order", {"order_id": "#W0000002", "reason": "no longer needed"})


def folder(tmp_path: Path, tasks: list[Any] | None = None, db: Any = None) -> Path:
    root = tmp_path / "tau2"
    root.mkdir(parents=True, exist_ok=True)
    (root / "db.json").write_text(json.dumps(DB if db is None else db))
    (root / "tasks.json").write_text(json.dumps(TASKS if tasks is None else tasks))
    (root / "policy.md").write_text(POLICY)
    return root


def imported(tmp_path: Path, tasks: list[Any]) -> ImportReport:
    return import_tau2(folder(tmp_path, tasks), tmp_path / "suite", FAST)


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


# --- task ids --------------------------------------------------------------------------------


def test_a_duplicate_task_id_is_refused_naming_both(tmp_path: Path) -> None:
    """The second used to overwrite the first's files, and both were listed as converted."""
    tasks = [_task("0", [AUTH]), _task("1", [CANCEL]), _task("1", [AUTH])]
    with pytest.raises(SpecError, match=r"\[2\]\.id: τ² task '1' appears twice \(also \[1\]\)"):
        imported(tmp_path, tasks)


@pytest.mark.parametrize(
    ("first", "second"),
    [("7", "007"), ("a", "A"), ("x.1", "X.1")],
    ids=["zero-padded", "case", "case-dotted"],
)
def test_ids_that_would_share_a_task_id_convert_once(
    tmp_path: Path, first: str, second: str
) -> None:
    """The second used to overwrite the first's files and be listed as converted twice."""
    report = imported(tmp_path, [_task(first, [CANCEL]), _task(second, [AUTH])])
    assert len(report.converted) == 1 and list(report.unconverted) == [second]
    assert f"τ² task {first!r}'s too" in report.unconverted[second]
    task_file = tmp_path / "suite" / "tasks" / f"{report.converted[0]}.yaml"
    assert "cancel_pending_order" in (tmp_path / "suite" / "solutions" / report.converted[0]
                                      / "oracle.yaml").read_text()  # fmt: skip
    assert task_file.is_file()


@pytest.mark.parametrize(
    "bad_id", ["a/b", "../../escape", "tâche", "with space", "x\ny", "😀", "\u0667"]
)
def test_an_id_that_cannot_name_a_task_is_listed_and_writes_nothing_for_it(
    tmp_path: Path, bad_id: str
) -> None:
    report = imported(tmp_path, [_task("0", [AUTH]), _task(bad_id, [CANCEL])])
    assert report.converted == ["retail-000"]
    assert "cannot name a task" in report.unconverted[bad_id]
    assert files_under(tmp_path / "suite" / "tasks") == {"retail-000.yaml"}
    assert files_under(tmp_path / "suite" / "fixtures") == {"retail-000.json"}
    assert not (tmp_path / "escape.json").exists() and not (tmp_path / "tau2" / "b.json").exists()
    load_suite(tmp_path / "suite")  # what was written loads


# --- gold actions ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ({"order_id": ["#W0000002"], "reason": "no longer needed"}, "order_id"),
        ({"order_id": {"id": "#W0000002"}, "reason": "no longer needed"}, "order_id"),
        ({"order_id": 2, "reason": "no longer needed"}, "order_id"),
        ({"order_id": None, "reason": "no longer needed"}, "order_id"),
        ({"order_id": "#W0000002", "reason": True}, "reason"),
    ],
)
def test_gold_arguments_of_another_type_make_the_task_unconvertible(
    tmp_path: Path, args: dict[str, Any], named: str
) -> None:
    """A list or object used to crash the import (unhashable); a number was converted into an
    oracle whose call fails the suite's own schema check."""
    report = imported(tmp_path, [_task("0", [AUTH]), _task("1", [("cancel_pending_order", args)])])
    reason = report.unconverted["1"]
    assert "does not fit its interface" in reason and named in reason, reason


def test_a_gold_action_with_an_item_list_of_numbers_is_unconvertible(tmp_path: Path) -> None:
    exchange = {
        "order_id": "#W0000001",
        "item_ids": [1001],
        "new_item_ids": ["1002"],
        "payment_method_id": "credit_card_1",
    }
    report = imported(tmp_path, [_task("0", [AUTH]), _task("1", [
        ("exchange_delivered_order_items", exchange)])])  # fmt: skip
    assert "item_ids.0" in report.unconverted["1"]


def test_when_nothing_converts_the_error_gives_each_reason(tmp_path: Path) -> None:
    tasks = [_task("1", [("refund_everything", {})]), _task("2/3", [AUTH])]
    args = ["import-tau2", str(folder(tmp_path, tasks)), "--into", str(tmp_path / "s")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "refund_everything" in result.output and "'2/3': its id" in result.output
    assert "Traceback" not in result.output


# --- what τ² grades or sets up -----------------------------------------------------------------


def graded(tmp_path: Path, **criteria: Any) -> Any:
    task = _task("1", [CANCEL])
    task["evaluation_criteria"].update(criteria)
    return task


@pytest.mark.parametrize(
    ("criteria", "reason"),
    [
        ({"reward_basis": ["COMMUNICATE"]}, "does not grade its database"),
        ({"reward_basis": ["NL_ASSERTION"]}, "does not grade its database"),
        ({"reward_basis": []}, "does not grade its database"),
        ({"reward_basis": ["DB", "ACTION"]}, "grades it by ACTION"),
        ({"reward_basis": ["DB", "SOMETHING_NEW"]}, "grades it by SOMETHING_NEW"),
        (
            {"reward_basis": ["DB", "ENV_ASSERTION"], "env_assertions": [{"func_name": "x"}]},
            "environment assertions",
        ),
    ],
)
def test_what_the_conversion_cannot_grade_as_tau2_does_is_listed(
    tmp_path: Path, criteria: dict[str, Any], reason: str
) -> None:
    """These were converted silently into tasks graded on a state τ² does not grade, or
    without the checks τ² adds."""
    report = imported(tmp_path, [_task("0", [AUTH]), graded(tmp_path, **criteria)])
    assert reason in report.unconverted["1"]


def test_an_initial_state_is_listed_and_an_empty_one_is_not(tmp_path: Path) -> None:
    changed = {**_task("1", [CANCEL]), "initial_state": {"initialization_actions": [{}]}}
    empty = {**_task("2", [AUTH]), "initial_state": None}
    report = imported(tmp_path, [changed, empty])
    assert "initial_state" in report.unconverted["1"] and report.converted == ["retail-002"]


def test_env_assertions_outside_the_basis_do_not_block(tmp_path: Path) -> None:
    report = imported(tmp_path, [graded(tmp_path, env_assertions=[{"func_name": "x"}])])
    assert report.converted == ["retail-001"]


def communicates(tmp_path: Path, task_id: str = "retail-001") -> list[str]:
    task = yaml.safe_load((tmp_path / "suite" / "tasks" / f"{task_id}.yaml").read_text())
    return [c["at_least"]["match"]["matches"] for c in task["hard_process_constraints"]]


@pytest.mark.parametrize(
    ("criteria", "is_graded"),
    [
        ({"reward_basis": ["DB", "COMMUNICATE"]}, True),
        ({"reward_basis": ["DB", "NL_ASSERTION"], "nl_assertions": ["Tells 30.0"]}, True),
        ({"reward_basis": ["DB", "NL_ASSERTION"], "nl_assertions": None}, False),  # τ² 30-32
        ({"reward_basis": ["DB", "NL_ASSERTION"], "nl_assertions": []}, False),
        ({"reward_basis": ["DB"], "nl_assertions": ["Tells 30.0"]}, False),
    ],
)
def test_communicate_info_is_graded_where_tau2_grades_it(
    tmp_path: Path, criteria: dict[str, Any], is_graded: bool
) -> None:
    """τ² multiplies in COMMUNICATE only when its reward basis names it, and a judge with no
    statements scores 1: an agent keeping the value to itself passes there."""
    task = graded(tmp_path, communicate_info=["30.0"], **criteria)
    report = imported(tmp_path, [task])
    assert communicates(tmp_path) == ([info_pattern("30.0")] if is_graded else [])
    oracle = (tmp_path / "suite" / "solutions" / "retail-001" / "oracle.yaml").read_text()
    assert "30.0" in oracle  # the oracle still says it: harmless either way
    notes = [n for note in report.notes for n in note.notes]
    assert ("communicate_info not graded: τ² does not grade it for this task" in notes) != (
        is_graded
    )


@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_communicate_string_converts(tmp_path: Path, value: str) -> None:
    """It crashed the import (``zip`` of unequal lengths); τ² finds it in any agent text."""
    task = graded(tmp_path, communicate_info=[value], reward_basis=["DB", "COMMUNICATE"])
    imported(tmp_path, [task])
    assert communicates(tmp_path) == [""]


# --- db.json -----------------------------------------------------------------------------------


def broken(change: Any) -> dict[str, Any]:
    db = copy.deepcopy(DB)
    change(db)
    return db


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda db: db["users"]["ann_lee_1"].pop("email"), "users.ann_lee_1.email"),
        (lambda db: db["users"].update(ann_lee_1=None), "users.ann_lee_1"),
        (lambda db: db["users"]["ann_lee_1"]["name"].update(first_name=7), "first_name"),
        (
            lambda db: db["users"]["bob_ray_2"]["payment_methods"]["paypal_2"].update(
                source="cash"
            ),
            "payment_methods.paypal_2.source",
        ),
        (lambda db: db["orders"]["#W0000001"]["items"][0].update(price="ten"), "items.0.price"),
        (lambda db: db["orders"]["#W0000001"].update(items=None), "#W0000001.items"),
        (lambda db: db["products"]["100"]["variants"].pop("1001").get("x"), None),
        (lambda db: db["users"]["bob_ray_2"].update(user_id="bob"), "bob_ray_2.user_id"),
        (lambda db: db["products"]["200"]["variants"]["2001"].update(item_id="9"), "2001.item_id"),
        (lambda db: db.update(orders=[]), "orders"),
    ],
)
def test_a_malformed_database_record_is_one_line_naming_it(
    tmp_path: Path, change: Any, where: str | None
) -> None:
    """They crashed the import with a KeyError or TypeError traceback."""
    root = folder(tmp_path, [_task("0", [AUTH])], broken(change))
    result = CliRunner().invoke(main, ["import-tau2", str(root), "--into", str(tmp_path / "s")])
    if where is None:  # a variant missing from its product is no malformed record
        assert result.exit_code == 0, result.output
        return
    assert result.exit_code == 2, result.output
    assert "db.json" in result.output and where in result.output, result.output
    assert "Traceback" not in result.output


def test_numbers_given_as_text_read_as_tau2s_models_read_them(tmp_path: Path) -> None:
    """τ²'s pydantic models read ``"10.0"`` as 10.0: so does the import (not a text price)."""
    texted = broken(lambda db: db["orders"]["#W0000002"]["items"][0].update(price="10.0"))
    import_tau2(folder(tmp_path, [_task("1", [CANCEL])], texted), tmp_path / "a", FAST)
    import_tau2(folder(tmp_path / "b", [_task("1", [CANCEL])]), tmp_path / "b" / "s", FAST)
    ours = (tmp_path / "a" / "tasks" / "retail-001.yaml").read_text()
    theirs = (tmp_path / "b" / "s" / "tasks" / "retail-001.yaml").read_text()
    assert ours.split("initial_state_fixture")[1] == theirs.split("initial_state_fixture")[1]


# --- faithfulness on τ²'s own data -------------------------------------------------------------

needs_data = pytest.mark.skipif(
    not (DATA / "tasks.json").is_file(), reason=f"τ²-bench retail data not found at {DATA}"
)
SAMPLE = 14


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    into = tmp_path_factory.mktemp("tau2-real") / "suite"
    source = json.loads((DATA / "tasks.json").read_text())
    picked = [*random.Random(2).sample(range(len(source)), SAMPLE), 30, 16, 22, 105]
    ids = [source[i]["id"] for i in sorted(set(picked))]
    import_tau2(DATA, into, ImportOptions(tasks=ids, mutation_testing="off"))
    return into, {t["id"]: t for t in source if t["id"] in ids}


def gold_steps(task: dict[str, Any], *, say: bool = True) -> list[Step]:
    """τ²'s gold actions as they are listed, with a final reply carrying communicate_info."""
    criteria = task["evaluation_criteria"]
    steps = [Step(call=a["name"], args=a["arguments"]) for a in criteria["actions"]]
    told = "; ".join(criteria.get("communicate_info") or []) if say else ""
    return [*steps, Step(finish=f"Done. {told}")]


@needs_data
def test_tau2s_gold_actions_as_listed_reach_the_expected_state(
    real: tuple[Path, dict[str, Any]],
) -> None:
    """The expected state is not copied from τ²: it is the importer's replay, with reads it
    added. τ²'s bare gold list, without them, must reach the same state."""
    into, tasks = real
    suite = load_suite(into)
    for tau2_id, task in tasks.items():
        run = run_solution(suite, f"retail-{int(tau2_id):03d}", gold_steps(task))
        outcome = {c.id: c.passed for c in run.outcome_assertion_results}
        assert outcome == {"gold-state": True}, (tau2_id, run.outcome_assertion_results)


@needs_data
def test_leaving_out_a_state_changing_gold_write_fails_as_in_tau2(
    real: tuple[Path, dict[str, Any]],
) -> None:
    into, tasks = real
    suite = load_suite(into)
    checked = 0
    for tau2_id, task in tasks.items():
        steps, task_id = gold_steps(task), f"retail-{int(tau2_id):03d}"
        last = _last_effective_write(into, task_id, steps)
        if last is None:
            continue  # nothing changes: τ²'s database check cannot fail a missing call
        run = run_solution(suite, task_id, steps[:last] + steps[last + 1 :])
        assert not run.success and run.terminal_reason == "agent_failure/incorrect_state", tau2_id
        checked += 1
    assert checked >= SAMPLE // 2


def _last_effective_write(into: Path, task_id: str, steps: list[Step]) -> int | None:
    """The index of the last gold write that changes the state (replayed on the fixture)."""
    tools = load_tools(into / "tools.py")
    effective = None
    with SqliteEnvironment(into / "fixtures" / f"{task_id}.json", clock=CLOCK) as env:
        for index, step in enumerate(steps[:-1]):
            done = replay_call(env, tools, Action(name=step.call or "", arguments=step.args))
            if done.wrote and step.call in WRITE_TOOLS:
                effective = index
    return effective


@needs_data
def test_communication_is_required_only_where_tau2_grades_it(
    real: tuple[Path, dict[str, Any]],
) -> None:
    """Task 16 (a judge statement restating the refund) requires the amount; task 30's
    tracking number is in communicate_info but τ²'s reward ignores it (basis DB and
    NL_ASSERTION, no statements)."""
    into, tasks = real
    suite = load_suite(into)
    for tau2_id, wanted in (("16", True), ("30", False)):
        task_id = f"retail-{int(tau2_id):03d}"
        constraints = suite.tasks[task_id].hard_process_constraints
        required = [c.id for c in constraints if c.id.startswith("communicates-")]
        assert bool(required) is wanted, (tau2_id, required)
        silent = run_solution(suite, task_id, gold_steps(tasks[tau2_id], say=False))
        failed = {c.id for c in silent.constraint_results if not c.passed}
        assert any(c.startswith("communicates-") for c in failed) is wanted, (tau2_id, failed)


@pytest.mark.parametrize("sample", ["-1", "0"])
def test_a_sample_of_no_tasks_is_a_usage_error(tmp_path: Path, sample: str) -> None:
    """-1 was a ValueError traceback from ``random.sample``; 0 said no task converted."""
    args = ["import-tau2", str(folder(tmp_path)), "--into", str(tmp_path / "s")]
    result = CliRunner().invoke(main, [*args, "--sample", sample])
    assert result.exit_code == 2 and "--sample" in result.output, result.output
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        ImportOptions(sample=int(sample))


@pytest.mark.parametrize(
    ("splits", "where"),
    [
        ({"base": "0,1"}, "split_tasks.json: base"),  # "1" would match "10,11" by substring
        ({"base": [0, 1]}, "split_tasks.json: base.0"),  # would match no string id
        (["0", "1"], "split_tasks.json"),  # was ignored without a word
    ],
)
def test_a_malformed_split_file_is_one_line_naming_it(
    tmp_path: Path, splits: Any, where: str
) -> None:
    root = folder(tmp_path)
    (root / "split_tasks.json").write_text(json.dumps(splits))
    result = CliRunner().invoke(main, ["import-tau2", str(root), "--into", str(tmp_path / "s")])
    assert result.exit_code == 2 and where in result.output, result.output


def test_a_policy_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    root = folder(tmp_path)
    (root / "policy.md").write_bytes(
        "Politique de retour: 30 jours, détaillée.\n".encode("latin-1")
    )
    result = CliRunner().invoke(main, ["import-tau2", str(root), "--into", str(tmp_path / "s")])
    assert result.exit_code == 2 and "policy.md: not UTF-8 text" in result.output, result.output


def test_writing_into_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("mine")
    args = ["import-tau2", str(folder(tmp_path)), "--into", str(tmp_path / "taken")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "is not a folder" in result.output, result.output
    assert (tmp_path / "taken").read_text() == "mine"


@pytest.mark.parametrize(
    "text",
    [
        "cancel\x07 order #W0000002\x00",  # control characters: the task file did not load
        "line1\x85line2\u2028line3 #W0000002",  # read back as line breaks: the request changed
        "\u202eRTL\u202c 😀 café, ünïcödé #W0000002",
        "\ufeffhello #W0000002",
    ],
    ids=["control", "line-separators", "bidi-emoji", "bom"],
)
def test_unusual_text_in_a_scenario_reaches_the_task_unchanged(tmp_path: Path, text: str) -> None:
    task = _task("1", [CANCEL], reason=text)
    task["user_scenario"]["instructions"]["known_info"] = text
    task["evaluation_criteria"]["nl_assertions"] = [text]
    imported(tmp_path, [task])
    loaded = load_suite(tmp_path / "suite").tasks["retail-001"]
    assert loaded.user_request == text.strip()
    header = (tmp_path / "suite" / "tasks" / "retail-001.yaml").read_text().split("task_id:")[0]
    assert all(ch.isprintable() for line in header.splitlines() for ch in line)


def test_an_empty_task_list_says_so(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"no task could be converted \(it lists none\)"):
        imported(tmp_path, [])


def test_instructions_given_as_one_text_convert(tmp_path: Path) -> None:
    """τ²'s model takes a scenario's instructions as free text too; such a task was refused
    ("Input should be a valid dictionary") and with it the whole import."""
    task = _task("1", [CANCEL])
    task["user_scenario"]["instructions"] = "You want to cancel order #W0000002. Be brief."
    report = imported(tmp_path, [task, {**_task("2", [AUTH]), "user_scenario": {
        "instructions": {"reason_for_call": "Hi", "task_instructions": "x"}}}])  # fmt: skip
    assert report.converted == ["retail-001", "retail-002"]
    loaded = load_suite(tmp_path / "suite").tasks["retail-001"]
    assert loaded.user_request == "You want to cancel order #W0000002. Be brief."

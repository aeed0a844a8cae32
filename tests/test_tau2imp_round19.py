"""τ²-bench imports, nineteenth round: every real termination reason and every user-simulator
failure mapped to the reference's terminal reasons, and pass^k against τ²'s own metric.

The files are laid out as τ² (sierra-research/tau2-bench, ``SimulationRun.model_dump``) writes
them: ``run_with_retry``'s placeholder for an exception its retries did not get past
(``infrastructure_error``, ``reward_info: null``, ``info.error``/``error_type``/
``error_traceback``), the evaluator's 0 for a premature end, the full-duplex runner's
``hallucination_check`` and ``hallucination_retries_used``, and its discarded-runs file.
"""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

import pytest

from groundstate.store import RunStore
from tests.test_imports_formats import Store, cli, write_json


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


NORMAL = ("user_stop", "agent_stop")


def sim(sid: str, task: str, trial: int, end: str = "user_stop", reward: float = 1.0,
        **extra: Any) -> dict[str, Any]:  # fmt: skip
    """A simulation as τ² dumps it; a premature end carries the evaluator's 0 and its note."""
    if end not in NORMAL:
        reward = 0.0
        scored: dict[str, Any] | None = {
            "reward": 0.0, "reward_basis": None,
            "info": {"note": f"Simulation terminated prematurely. Termination reason: {end}"},
        }  # fmt: skip
    else:
        scored = {"reward": reward, "db_check": {"db_match": reward == 1.0, "db_reward": reward},
                  "reward_basis": ["DB"], "reward_breakdown": {"DB": reward},
                  "info": None}  # fmt: skip
    item = {
        "id": sid, "task_id": task, "timestamp": "2026-01-05T10:00:00",
        "start_time": "2026-01-05T10:00:00", "end_time": "2026-01-05T10:01:00",
        "duration": 60.0, "termination_reason": end, "agent_cost": 0.01, "user_cost": 0.002,
        "reward_info": scored, "messages": [], "trial": trial, "seed": 300 + trial,
        "mode": "half_duplex", "info": None, "hallucination_retries_used": 0,
        "hallucination_check": None,
    }  # fmt: skip
    item.update(extra)
    return item


def frames(*paths: str, last: str = "litellm.exceptions.ContextWindowExceededError: ...") -> str:
    lines = ["Traceback (most recent call last):"]
    for path in paths:
        lines += [f'  File "{path}", line 10, in f', "    call()"]
    return "\n".join([*lines, last])


SRC = "/home/u/tau2-bench/src/tau2"
RUNNER = f"{SRC}/runner/progress.py"
ORCH = f"{SRC}/orchestrator/orchestrator.py"
LLM = f"{SRC}/utils/llm_utils.py"
LITELLM = "/home/u/.venv/lib/python3.12/site-packages/litellm/utils.py"
OVERFLOW = ("litellm.ContextWindowExceededError: ContextWindowExceededError: OpenAIException - "
            "This model's maximum context length is 128000 tokens.")  # fmt: skip


def infra(sid: str, task: str, trial: int, error_type: str, error: str,
          traceback: str = "") -> dict[str, Any]:  # fmt: skip
    """``run_with_retry``'s placeholder once every retry raised."""
    return sim(sid, task, trial, "infrastructure_error", duration=0.0, agent_cost=None,
               user_cost=None, reward_info=None,
               info={"error": error, "error_type": error_type, "error_traceback": traceback,
                     "failed_after_attempts": 4})  # fmt: skip


AGENT_OVERFLOW = infra("o1", "9", 0, "ContextWindowExceededError", OVERFLOW,
                       frames(RUNNER, ORCH, f"{SRC}/agent/llm_agent.py", LLM, LITELLM))  # fmt: skip
USER_OVERFLOW = infra("o2", "9", 0, "ContextWindowExceededError", OVERFLOW,
                      frames(RUNNER, ORCH, f"{SRC}/user/user_simulator.py", LLM,
                             LITELLM))  # fmt: skip
WINDOWS_USER_OVERFLOW = infra(
    "o3", "9", 0, "ContextWindowExceededError", OVERFLOW,
    frames(r"C:\tau2-bench\src\tau2\orchestrator\orchestrator.py",
           r"C:\tau2-bench\src\tau2\user\user_simulator.py", r"C:\tau2-bench\src\tau2\utils\x.py"),
)  # fmt: skip
JUDGE_OVERFLOW = infra("o7", "9", 0, "ContextWindowExceededError", OVERFLOW,
                       frames(RUNNER, f"{SRC}/runner/simulation.py",
                              f"{SRC}/evaluator/evaluator_nl_assertions.py", LLM,
                              LITELLM))  # fmt: skip
BARE_OVERFLOW = infra("o4", "9", 0, "BadRequestError",
                      "Error code: 400 - {'error': {'code': "
                      "'context_length_exceeded'}}")  # fmt: skip
HTTPX = "/home/u/.venv/lib/python3.12/site-packages/httpx/_transports/default.py"
AGENT = f"{SRC}/agent/llm_agent.py"
DISCONNECT = infra("o5", "9", 0, "APIConnectionError", "Connection error.",
                   frames(RUNNER, ORCH, AGENT, LLM, LITELLM, HTTPX,
                          last="litellm.exceptions.APIConnectionError: ..."))  # fmt: skip
JSON = "/usr/lib/python3.12/json/decoder.py"


def raised(*paths: str) -> dict[str, Any]:
    """An exception raised at the innermost of *paths*, on every retry."""
    return infra("r1", "9", 0, "ValueError", "bad tool arguments",
                 frames(RUNNER, ORCH, *paths, last="ValueError: bad tool arguments"))  # fmt: skip


WORKER = infra("o6", "9", 0, "WorkerFailure", "worker 3 exited with code -9")
FOUND = {"reasoning": "...", "hallucination_found": True, "summary": "made up a zip code",
         "errors": [{"reasoning": "zip 90210 is not in the instructions"}],
         "cost": 0.003}  # fmt: skip
CLEAN = {**FOUND, "hallucination_found": False, "errors": [], "summary": "none"}

ENV, GRADER = "environment_failure", "grader_failure"

# (simulation, terminal reason, valid) — one row per line of docs/interop.md's table.
TABLE = {
    "user_stop, reward 1": (sim("a", "9", 0), "success", True),
    "agent_stop, reward 0": (sim("a", "9", 0, "agent_stop", 0.0), "agent_failure/incorrect_state",
                             True),
    "max_steps": (sim("a", "9", 0, "max_steps"), "agent_failure/step_limit", True),
    "timeout": (sim("a", "9", 0, "timeout"), "agent_failure/time_limit", True),
    "too_many_errors": (sim("a", "9", 0, "too_many_errors"), "agent_failure/too_many_errors",
                        True),
    "agent_error": (sim("a", "9", 0, "agent_error"), "harness_compatibility_failure/agent_error",
                    True),
    "context_window_exceeded": (sim("a", "9", 0, "context_window_exceeded"),
                                "harness_compatibility_failure/context_window", True),
    "user_error": (sim("a", "9", 0, "user_error"), "environment_failure/user_simulator", False),
    "unexpected_error": (sim("a", "9", 0, "unexpected_error"),
                         "environment_failure/unexpected_error", False),
    "infra: API disconnect": (DISCONNECT, "environment_failure/infrastructure", False),
    "infra: worker lost": (WORKER, "environment_failure/infrastructure", False),
    "infra: agent's model overflowed": (AGENT_OVERFLOW,
                                        "harness_compatibility_failure/context_window", True),
    "infra: overflow, no traceback": (BARE_OVERFLOW,
                                      "harness_compatibility_failure/context_window", True),
    "infra: user simulator's model overflowed": (USER_OVERFLOW,
                                                 "environment_failure/user_simulator", False),
    "infra: user overflow, Windows paths": (WINDOWS_USER_OVERFLOW,
                                            "environment_failure/user_simulator", False),
    "infra: the evaluator's judge overflowed": (JUDGE_OVERFLOW, "grader_failure", False),
    "infra: tau2's agent raised": (raised(AGENT), "agent_failure/crashed", True),
    "infra: a custom agent raised, through json": (
        raised("/home/u/agents/my_agent.py", JSON), "agent_failure/crashed", True),
    "infra: the agent, tau2 installed as a package": (
        raised("/home/u/.venv/lib/python3.12/site-packages/tau2/agent/llm_agent.py"),
        "agent_failure/crashed", True),
    "infra: a custom agent raised, Windows": (
        raised(r"C:\agents\my_agent.py", r"C:\Python312\Lib\json\decoder.py"),
        "agent_failure/crashed", True),
    "infra: a package the agent called raised": (
        raised("/home/u/agents/my_agent.py", HTTPX), "environment_failure/infrastructure", False),
    "infra: tau2's LLM client raised for the agent": (
        raised(AGENT, LLM, JSON), "environment_failure/infrastructure", False),
    "infra: the environment's replay raised": (
        raised(f"{SRC}/environment/environment.py"), "environment_failure/infrastructure", False),
    "infra: the user simulator raised": (
        raised(f"{SRC}/user/user_simulator.py"), "environment_failure/infrastructure", False),
    "hallucinated, reward 1": (sim("a", "9", 0, hallucination_check=FOUND),
                               "environment_failure/user_simulator", False),
    "hallucinated, reward 0": (sim("a", "9", 0, "agent_stop", 0.0, hallucination_check=FOUND),
                               "environment_failure/user_simulator", False),
    "hallucinated, max_steps": (sim("a", "9", 0, "max_steps", hallucination_check=FOUND),
                                "environment_failure/user_simulator", False),
    "hallucinated, agent_error": (sim("a", "9", 0, "agent_error", hallucination_check=FOUND),
                                  "environment_failure/user_simulator", False),
    "hallucinated, unexpected_error": (
        sim("a", "9", 0, "unexpected_error", hallucination_check=FOUND),
        "environment_failure/unexpected_error", False),
    "checked clean after 2 reruns": (
        sim("a", "9", 0, "agent_stop", 0.0, hallucination_check=CLEAN,
            hallucination_retries_used=2), "agent_failure/incorrect_state", True),
    "retries ran out, last run unchecked": (
        sim("a", "9", 0, hallucination_retries_used=3), "success", True),
    "grader raised": (sim("a", "9", 0, "user_stop", 0.0,
                          reward_info={"reward": 0.0, "info": {"error": "replay diverged"}}),
                      "grader_failure", False),
}  # fmt: skip


def _results(path: Path, simulations: list[dict[str, Any]], trials: int = 3) -> Path:
    info = {"git_commit": "abc", "num_trials": trials, "max_steps": 200, "max_errors": 10,
            "user_info": {"implementation": "user_simulator", "llm": "gpt-4.1"},
            "agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1-mini"},
            "environment_info": {"domain_name": "retail", "policy": "..."},
            "seed": 300}  # fmt: skip
    tasks = sorted({s["task_id"] for s in simulations})
    return write_json(path, {"timestamp": "2026-01-05T10:00:00", "info": info,
                             "tasks": [{"id": t} for t in tasks],
                             "simulations": simulations})  # fmt: skip


def _stored(store: Store, batch: str) -> list[tuple[str, str, bool]]:
    with RunStore(store.path) as runs:
        assert runs.verify(batch).ok
        return [(r.task_id, r.terminal_reason, r.valid) for r in runs.runs(batch)]


@pytest.mark.parametrize("case", list(TABLE))
def test_each_termination_and_user_simulator_failure_maps_as_the_table_says(
    store: Store, tmp_path: Path, case: str
) -> None:
    item, reason, valid = TABLE[case]
    batch = store.imported(_results(tmp_path / "results.json", [item], trials=1))
    assert _stored(store, batch) == [("9", reason, valid)]
    assert reason.startswith((ENV, GRADER)) != valid  # the taxonomy's own rule


def test_tau2s_discarded_hallucination_runs_are_all_invalid(store: Store, tmp_path: Path) -> None:
    """``hallucination_discarded/results_user_hallucination.json``: the runs τ² threw away and
    ran again. Imported, none of them counts (two passed, one failed)."""
    folder = tmp_path / "hallucination_discarded"
    folder.mkdir()
    discarded = [sim("d1", "4", 0, hallucination_check=FOUND),
                 sim("d2", "4", 1, "agent_stop", 0.0, hallucination_check=FOUND),
                 sim("d3", "7", 1, hallucination_check=FOUND)]  # fmt: skip
    batch = store.imported(_results(folder / "results_user_hallucination.json", discarded))
    assert {valid for _, _, valid in _stored(store, batch)} == {False}
    report = store.report(batch)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (0, 3)


# τ²'s own metric, written from src/tau2/metrics/agent_metrics.py: leave out
# infrastructure_error, success is a reward within 1e-6 of 1, k up to the fewest simulations of
# a task (and num_trials), pass^k the mean over tasks of C(c, k) / C(n, k).


def tau2_pass_hat(simulations: list[dict[str, Any]], trials: int) -> dict[int, float]:
    outcomes: dict[str, list[bool]] = {}
    for s in simulations:
        if s["termination_reason"] != "infrastructure_error":
            reward = s["reward_info"]["reward"]
            outcomes.setdefault(s["task_id"], []).append(1 - 1e-6 <= reward <= 1 + 1e-6)
    top = min([trials, *(len(o) for o in outcomes.values())])
    return {
        k: sum(comb(sum(o), k) / comb(len(o), k) for o in outcomes.values()) / len(outcomes)
        for k in range(1, top + 1)
    }


def _ours(report: dict[str, Any]) -> dict[int, float]:
    return {int(k): row["estimate"] for k, row in report["pass_hat_k"].items()}


AGREE = [  # every end on which our validity and τ²'s denominators agree
    sim("1a", "1", 0), sim("1b", "1", 1, "agent_stop", 0.0), sim("1c", "1", 2),
    sim("1d", "1", 3, "max_steps"),
    sim("2a", "2", 0, "too_many_errors"), sim("2b", "2", 1), sim("2c", "2", 2),
    sim("2d", "2", 3, "agent_error"), infra("2e", "2", 4, "APIConnectionError", "reset"),
    sim("3a", "3", 0), sim("3b", "3", 1, "context_window_exceeded"), sim("3c", "3", 2),
    sim("3d", "3", 3, "timeout"), sim("3e", "3", 4, "agent_stop", 0.5),
    sim("4a", "4", 0), sim("4b", "4", 1), sim("4c", "4", 2), sim("4d", "4", 3),
    sim("4e", "4", 4, hallucination_check=CLEAN, hallucination_retries_used=1),
]  # fmt: skip


def test_pass_hat_k_is_tau2s_own_where_the_rules_agree(store: Store, tmp_path: Path) -> None:
    batch = store.imported(_results(tmp_path / "results.json", AGREE, trials=5))
    report = store.report(batch)
    theirs = tau2_pass_hat(AGREE, 5)
    assert set(_ours(report)) == set(theirs) == {1, 2, 3, 4}  # task 1 has 4 simulations
    for k, value in theirs.items():
        assert _ours(report)[k] == pytest.approx(value, abs=1e-12)
    assert (report["valid_attempts"], report["invalid_attempts"]) == (18, 1)


# Where they deliberately differ: a user simulator that failed (user_error, a hallucination
# found) is invalid here, 0 to τ²; a model's context overflow that τ²'s retries wrote as
# infrastructure_error counts here, out of τ²'s denominators. Ours is τ²'s formula over the
# attempts the taxonomy keeps.
DIFFER = [
    sim("1a", "1", 0), sim("1b", "1", 1), sim("1c", "1", 2, "user_error"),
    sim("2a", "2", 0), sim("2b", "2", 1, "agent_stop", 0.0, hallucination_check=FOUND),
    sim("2c", "2", 2),
    sim("3a", "3", 0), sim("3b", "3", 1),
    {**AGENT_OVERFLOW, "id": "3c", "task_id": "3", "trial": 2},
]  # fmt: skip


def test_pass_hat_k_differs_from_tau2s_only_as_documented(store: Store, tmp_path: Path) -> None:
    batch = store.imported(_results(tmp_path / "results.json", DIFFER, trials=3))
    stored = _stored(store, batch)
    assert [valid for _, _, valid in stored] == [True] * 2 + [False] + [True, False, True] + [
        True
    ] * 3
    report = store.report(batch)
    kept = [s for s, (_, _, valid) in zip(DIFFER, stored, strict=True) if valid]
    as_tau2_would = tau2_pass_hat(  # the overflow is a counted 0, the simulator's failures gone
        [{**s, "termination_reason": "user_stop", "reward_info": {"reward": 0.0}}
         if s["termination_reason"] == "infrastructure_error" else s for s in kept], 3)  # fmt: skip
    assert _ours(report) == pytest.approx(as_tau2_would)
    assert as_tau2_would == pytest.approx({1: 8 / 9, 2: 7 / 9})
    assert tau2_pass_hat(DIFFER, 3) == pytest.approx({1: 7 / 9, 2: 5 / 9})


MALFORMED = [
    ({"hallucination_check": "yes"}, "hallucination_check", "must be an object"),
    ({"hallucination_check": {"hallucination_found": "true"}},
     "hallucination_check.hallucination_found", "must be true or false, got 'true'"),
    ({"hallucination_check": {"hallucination_found": 1}},
     "hallucination_check.hallucination_found", "must be true or false, got 1"),
    ({"hallucination_retries_used": -1}, "hallucination_retries_used", "must not be negative"),
    ({"hallucination_retries_used": "2"}, "hallucination_retries_used", "'2'"),
]  # fmt: skip
INFRA_MALFORMED = [
    ({"info": ["ContextWindowExceededError"]}, "info", "must be an object"),
    ({"info": {"error_type": 3, "error": "x"}}, "info.error_type", "must be text"),
    ({"info": {"error_type": "X", "error_traceback": ["..."]}}, "info.error_traceback",
     "must be text"),
]  # fmt: skip


@pytest.mark.parametrize(("edit", "field", "why"), MALFORMED + INFRA_MALFORMED)
def test_a_malformed_user_simulator_or_error_field_is_refused_whole(
    store: Store, tmp_path: Path, edit: dict[str, Any], field: str, why: str
) -> None:
    base = DISCONNECT if "info" in edit else sim("b", "5", 1)
    path = _results(tmp_path / "results.json", [sim("a", "5", 0), {**base, **edit}], trials=2)
    err = store.refused(path)
    assert f"{path}:simulations[1]" in err and field in err and why in err


def test_the_dir_format_names_the_simulation_file(store: Store, tmp_path: Path) -> None:
    root = tmp_path / "run"
    (root / "simulations").mkdir(parents=True)
    items = [sim("s1", "5", 0), sim("s2", "5", 1, hallucination_check={"hallucination_found": 0})]
    index = [{"id": s["id"], "task_id": s["task_id"], "trial": s["trial"]} for s in items]
    meta = json.loads(_results(tmp_path / "meta.json", items).read_text())
    write_json(root / "results.json", {**meta, "simulations": [], "simulation_index": index})
    for item in items:
        write_json(root / "simulations" / f"{item['id']}.json", item)
    before = store.batches()
    code, _, err = cli("import-results", str(root / "results.json"), "--name", "x",
                       "--store", str(store.path))  # fmt: skip
    assert code == 2 and "Traceback" not in err and store.batches() == before
    assert (
        f"{root / 'simulations' / 's2.json'}: " in err
        and "hallucination_check.hallucination_found" in err
    )

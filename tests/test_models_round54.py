"""Fifty-fourth round: the models served, read from the store without a scan of every record,
and ``run --json``'s served models as the provider answered them.

Classes of defect fixed:

- ``report`` (and ``report --json``) read the batch's served models by matching the text of
  every record of the batch (``LIKE '%"models_served"%'``): on 1,000,000 imported attempts,
  none of which names a model, that scan cost about a second of CPU beside a sealed report's
  two. A partial index (``runs_naming_models``) holds only the records whose text names the
  models served; the read goes through it, so a batch whose tries name none costs nothing,
  and a store made before the index gains it when opened. A store opened read-only without
  it is read by the scan, as before;
- ``run --json`` gave ``models_served`` tested only through records built in the test: a real
  model answer path (the ``openai-chat`` adapter against a loopback OpenAI-compatible
  server) now shows each name the provider answered with, its answers and tries, the same as
  ``report --json`` of the stored batch.
"""

from __future__ import annotations

import dataclasses
import html
import json
import re
import sqlite3
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import groundstate.store as store_module
from groundstate import served as served_module
from groundstate.agents.python import load_agent
from groundstate.cli import main
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, plan_batch
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore
from groundstate.testing import (
    FunctionAgent,
    OpenAICompatibleServer,
    attempt,
    scripted_system,
)
from groundstate.testing_models import by_turn
from groundstate.trace import ModelCallEvent

from .model_harness import KEYS, PROVIDERS, RETAIL, TASK, _harness
from .test_models_round17 import _oracle

OPENAI = PROVIDERS[0]
ASKED = "gpt-4.1-mini-2025-04-14"  # the example system's revision
SPELLED = "openai/gpt-4.1-mini-2025-04-14"  # the model asked for, under its maker's prefix
OTHER = "gpt-4.1-nano-2025-04-14"  # another model: a router's fallback


def _alternating(retail: Suite, even: str, odd: str) -> Callable[[dict[str, Any]], Any]:
    """The oracle of *TASK*, each answer by its turn; answers of even turns name *even*, of
    odd turns *odd* (every attempt, the smoke run included, gets the same)."""
    script = [
        dataclasses.replace(r, model=even if n % 2 == 0 else odd)
        for n, r in enumerate(_oracle(retail))
    ]
    return by_turn(script)


def _calls(run: AgentRun, named: str) -> int:
    """The answers of *run* that named *named*."""
    log = run.observation_action_log
    return sum(isinstance(e, ModelCallEvent) and e.served_model == named for e in log)


def _cli(*args: str, code: int = 0) -> Any:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def test_run_json_gives_the_models_the_provider_answered_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """``run --json`` through the real ``openai-chat`` adapter: each name the loopback
    provider answered with is an entry, with its answers (the calls the tries recorded) and
    tries; ``report --json`` of the stored batch gives the same."""
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    store = str(tmp_path / "runs.db")
    with OpenAICompatibleServer(_alternating(retail, SPELLED, OTHER)) as server:
        monkeypatch.setenv(OPENAI.base_url_env, server.base_url)
        ran = _cli(
            "run", str(RETAIL), "--system", str(OPENAI.system_file), "--task", TASK,
            "--attempts", "2", "--json", "--store", store,
        )  # fmt: skip
    assert [r["terminal_reason"] for r in ran["runs"]] == ["success", "success"]
    with RunStore(Path(store)) as stored:
        runs = stored.runs(ran["batch_id"])
    spelled, other = (sum(_calls(r, n) for r in runs) for n in (SPELLED, OTHER))
    assert spelled > 0 and other > 0
    assert ran["models_served"] == [
        {"requested": ASKED, "served": OTHER, "answers": other, "differs": True, "tries": 2},
        {
            "requested": ASKED,
            "served": SPELLED,
            "answers": spelled,
            "differs": False,
            "prefix": "openai/",
            "tries": 2,
        },
    ]
    reported = _cli("report", ran["batch_id"], "--json", "--store", store)
    assert reported["models_served"] == ran["models_served"]


def test_run_json_of_a_provider_answering_as_asked_names_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    store = str(tmp_path / "runs.db")
    with OpenAICompatibleServer(_alternating(retail, ASKED, ASKED)) as server:
        monkeypatch.setenv(OPENAI.base_url_env, server.base_url)
        ran = _cli(
            "run", str(RETAIL), "--system", str(OPENAI.system_file), "--task", TASK,
            "--json", "--store", store,
        )  # fmt: skip
    (entry,) = ran["models_served"]
    assert entry["served"] == ASKED and entry["differs"] is False and entry["tries"] == 1


# --- the models served read through an index ------------------------------------------------


async def _nothing(session: Any) -> str:
    return "Nothing done."


def _served_run(retail: Suite, named: str) -> AgentRun:
    """An attempt whose record names *named* as the model served (as the adapter writes)."""
    run = attempt(retail, TASK, FunctionAgent(_nothing), system=scripted_system()).run
    served = [{"requested": "gpt-4o", "served": named, "answers": 2, "differs": False}]
    status = run.infrastructure_status | {"models_served": served}
    return run.model_copy(update={"infrastructure_status": status})


def _store(path: Path, retail: Suite, runs: list[AgentRun]) -> str:
    batch = plan_batch(
        retail, load_system(OPENAI.system_file), BatchConfig(attempts=len(runs), tasks=(TASK,))
    )
    with RunStore(path) as stored:
        stored.add_batch(batch)
        for number, run in enumerate(runs, 1):
            update = {"batch_id": batch.batch_id, "attempt": number, "run_id": uuid.uuid4().hex}
            stored.add_run(run.model_copy(update=update), {})
    return batch.batch_id


def _plan(path: Path, batch_id: str) -> str:
    """How SQLite reads the store's models served (its query plan)."""
    plans: list[str] = []
    with RunStore(path) as stored:
        stored._db.set_trace_callback(plans.append)
        list(stored.models_served(batch_id))
        stored._db.set_trace_callback(None)
        (query,) = plans
        rows = stored._db.execute(f"EXPLAIN QUERY PLAN {query}").fetchall()
    return " ".join(str(row[-1]) for row in rows)


def _indexed(path: Path) -> list[int]:
    """The rowids read through the ``runs_naming_models`` index (SQLite refuses the query
    when the store lacks it)."""
    db = sqlite3.connect(path)
    try:
        sql = (
            "SELECT rowid FROM runs INDEXED BY runs_naming_models WHERE batch_id IS NOT NULL "
            f"AND {store_module._NAMES_MODELS}"
        )
        return sorted(row[0] for row in db.execute(sql))
    finally:
        db.close()


def test_the_models_served_are_read_through_an_index(tmp_path: Path, retail: Suite) -> None:
    """Only the records naming the models served are visited: a batch of scripted tries
    (no model named) costs no scan of its records."""
    path = tmp_path / "runs.db"
    plain = attempt(retail, TASK, FunctionAgent(_nothing), system=scripted_system()).run
    batch_id = _store(path, retail, [plain, _served_run(retail, "gpt-4o-mini"), plain])
    assert "USING INDEX runs_naming_models" in _plan(path, batch_id)
    assert len(_indexed(path)) == 1
    with RunStore(path) as stored:
        assert [e[0]["served"] for e in stored.models_served(batch_id)] == ["gpt-4o-mini"]


def test_a_store_made_before_the_index_gains_it(tmp_path: Path, retail: Suite) -> None:
    path = tmp_path / "runs.db"
    batch_id = _store(path, retail, [_served_run(retail, "gpt-4o-mini")] * 2)
    db = sqlite3.connect(path)
    db.execute("DROP INDEX runs_naming_models")
    db.commit()
    db.close()
    data = _cli("report", batch_id, "--json", "--store", str(path))
    assert [(e["served"], e["tries"]) for e in data["models_served"]] == [("gpt-4o-mini", 2)]
    assert len(_indexed(path)) == 2


def test_a_read_only_store_without_the_index_is_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A store that cannot be written here is not given the index: it is read by the scan."""
    path = tmp_path / "runs.db"
    batch_id = _store(path, retail, [_served_run(retail, "gpt-4o-mini")])
    db = sqlite3.connect(path)
    db.execute("DROP INDEX runs_naming_models")
    db.commit()
    db.close()
    monkeypatch.setattr(store_module.os, "access", lambda *_: False)  # as if not ours
    with RunStore(path, create=False) as stored:
        assert stored.read_only
        assert [e[0]["served"] for e in stored.models_served(batch_id)] == ["gpt-4o-mini"]


def test_a_hand_edit_naming_a_model_is_read_and_the_batch_altered(
    tmp_path: Path, retail: Suite
) -> None:
    """The index follows an edit of the table: a record edited to name a model is read (and
    the report says the batch was altered); one edited to name none is no longer read."""
    path = tmp_path / "runs.db"
    plain = attempt(retail, TASK, FunctionAgent(_nothing), system=scripted_system()).run
    batch_id = _store(path, retail, [plain, _served_run(retail, "gpt-4o-mini")])
    served = '{"answers":1,"requested":"gpt-4o","served":"gpt-4o-nano","differs":false}'
    db = sqlite3.connect(path)
    db.execute(
        "UPDATE runs SET record = json_set(record, '$.infrastructure_status.models_served', "
        "json_array(json(?))) WHERE attempt = 1",
        (served,),
    )
    db.execute(
        "UPDATE runs SET record = json_remove(record, '$.infrastructure_status.models_served') "
        "WHERE attempt = 2"
    )
    db.commit()
    db.close()
    data = _cli("report", batch_id, "--json", "--store", str(path), code=1)  # altered
    assert [e["served"] for e in data["models_served"]] == ["gpt-4o-nano"]
    assert data["integrity"]["verified"] is False


# --- Bedrock's Llama spelling ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "named", "spelling"),
    [
        (
            "llama-3.1-70b-instruct",
            "meta.llama3-1-70b-instruct-v1:0",
            {"prefix": "meta.", "version": "v1:0"},
        ),
        (
            "llama-3.3-70b-instruct",
            "us.meta.llama3-3-70b-instruct-v1:0",
            {"prefix": "us.meta.", "version": "v1:0"},
        ),
        (
            "Llama-3.1-70B-Instruct",
            "META.LLAMA3-1-70B-INSTRUCT-V1:0",
            {"prefix": "META.", "version": "V1:0"},
        ),
        (
            "llama-3-70b-instruct",
            "meta.llama3-70b-instruct-v1:0",
            {"prefix": "meta.", "version": "v1:0"},
        ),
        (
            "meta-llama/llama-3.1-8b-instruct",
            "bedrock/meta.llama3-1-8b-instruct-v1:0",
            {"prefix": "meta-llama/", "host": "bedrock/", "version": "v1:0"},
        ),
        ("qwen-2.5-72b-instruct", "Qwen/Qwen2.5-72B-Instruct", {"prefix": "Qwen/"}),
        ("phi-3-mini", "phi3-mini", {}),
    ],
)
def test_a_version_joined_to_the_family_word_is_the_model_requested(
    asked: str, named: str, spelling: dict[str, str]
) -> None:
    """Bedrock writes ``llama3-1`` for Llama 3.1 (and Hugging Face ``Qwen2.5``): the same
    model, not a fallback."""
    assert served_module.same_model(asked, named) == spelling


@pytest.mark.parametrize(
    ("asked", "named"),
    [
        ("llama-3.1-70b-instruct", "meta.llama3-1-8b-instruct-v1:0"),  # another size
        ("llama-3.1-70b-instruct", "meta.llama3-70b-instruct-v1:0"),  # Llama 3, not 3.1
        ("llama-3.1-70b-instruct", "meta.llama3-2-70b-instruct-v1:0"),
        ("llama-3.1-70b-instruct", "llama31-70b-instruct"),  # 31 is no 3.1
        ("llama-3.1-70b", "meta.llama3-1-70b-instruct-v1:0"),  # the instruct model
        ("llama-3.1-70b-instruct", "mistral.llama3-1-70b-instruct-v1:0"),  # not Mistral's
        ("gpt-4o", "gpt4o-mini"),
    ],
)
def test_another_llama_on_bedrock_still_differs(asked: str, named: str) -> None:
    assert served_module.same_model(asked, named) is None


def test_a_long_name_with_a_joined_version_is_read_in_linear_time() -> None:
    start = time.process_time()
    served_module.same_model("a" * 100_000 + "1", "a" * 99_999 + "-1")
    served_module.same_model("llama" + "1-" * 50_000, "meta.llama" + "1-" * 50_000 + "v1:0")
    assert time.process_time() - start < 2


# --- Azure deployments ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "named"),
    [
        ("azure/prod-chat", "prod-chat"),
        ("AZURE/Prod-Chat", "Prod-Chat"),
        ("azure_ai/team-a", "team-a"),
        ("azure/gpt-4o", None),  # names a model: compared as any other
        ("azure/openai/gpt-4o", None),
        ("prod-chat", None),  # no Azure route named: nothing says it is a deployment
        ("bedrock/prod-chat", None),
    ],
)
def test_what_is_an_azure_deployment(asked: str, named: str | None) -> None:
    assert served_module.deployment(asked) == named


def test_an_azure_deployment_is_the_model_its_provider_says_it_served(
    monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Through the real SDK: a request for the deployment ``azure/prod-chat`` answered by
    ``gpt-4o-2024-08-06`` is no other model (the deployment names none to compare)."""
    harness = _harness(OPENAI, monkeypatch, retail)
    script = [dataclasses.replace(r, model="gpt-4o-2024-08-06") for r in _oracle(retail)]
    run = harness.run(script, revision="azure/prod-chat")
    assert run.terminal_reason == "success", run.infrastructure_status
    (served,) = run.infrastructure_status["models_served"]
    assert served == {
        "requested": "azure/prod-chat",
        "served": "gpt-4o-2024-08-06",
        "answers": sum(isinstance(e, ModelCallEvent) for e in run.observation_action_log),
        "differs": False,
        "deployment": "prod-chat",
    }


def test_a_deployment_answered_by_two_models_differs(
    monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Answers of one deployment naming ``gpt-4o-2024-08-06`` and ``gpt-4o-mini``: one of them
    is not the deployment's model, and nothing says which: both are flagged."""
    harness = _harness(OPENAI, monkeypatch, retail)
    with OpenAICompatibleServer(_alternating(retail, "gpt-4o-2024-08-06", "gpt-4o-mini")) as s:
        system = harness.system(s, revision="azure/prod-chat")
        run = attempt(retail, TASK, load_agent(system), system=system).run
    entries = run.infrastructure_status["models_served"]
    assert sorted(e["served"] for e in entries) == ["gpt-4o-2024-08-06", "gpt-4o-mini"]
    assert all(e["differs"] is True and e["deployment"] == "prod-chat" for e in entries)


def test_a_deployment_answered_by_one_model_in_two_spellings_does_not_differ() -> None:
    asked = "azure/prod-chat"
    tries = [
        [{"requested": asked, "served": "gpt-4o-2024-08-06", "answers": 3}],
        [{"requested": asked, "served": "gpt-4o", "answers": 1}],
        [{"requested": "gpt-4o", "served": "gpt-4o-mini", "answers": 2}],
    ]
    served = served_module.served_in_batch(tries)
    assert [(e["served"], e["differs"]) for e in served] == [
        ("gpt-4o-mini", True),
        ("gpt-4o", False),
        ("gpt-4o-2024-08-06", False),
    ]
    assert [e.get("deployment") for e in served] == [None, "prod-chat", "prod-chat"]
    across = served_module.served_in_batch(
        [*tries, [{"requested": asked, "served": "gpt-4o-mini", "answers": 1}]]
    )
    assert all(e["differs"] for e in across if e["requested"] == asked)


# --- the HTML report ------------------------------------------------------------------------


def _page_text(page: Path) -> str:
    """The page's text, without its tags, spaces run together."""
    return " ".join(html.unescape(re.sub(r"<[^>]*>", "", page.read_text())).split())


def test_the_html_report_names_the_models_served(tmp_path: Path, retail: Suite) -> None:
    path = tmp_path / "runs.db"
    plain = attempt(retail, TASK, FunctionAgent(_nothing), system=scripted_system()).run
    batch_id = _store(path, retail, [_served_run(retail, "gpt-4o-mini"), plain])
    page = tmp_path / "report.html"
    args = ["report", batch_id, "--html", str(page), "--store", str(path)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    text = _page_text(page)
    assert "Another model served: 'gpt-4o-mini' for 'gpt-4o' (2 answers in 1 try)" in text
    assert "spelled otherwise" not in text


def test_the_html_report_of_a_model_spelled_otherwise(tmp_path: Path, retail: Suite) -> None:
    path = tmp_path / "runs.db"
    batch_id = _store(path, retail, [_served_run(retail, "openai/gpt-4o-2024-08-06")])
    page = tmp_path / "report.html"
    args = ["report", batch_id, "--html", str(page), "--store", str(path)]
    assert CliRunner().invoke(main, args).exit_code == 0
    text = _page_text(page)
    assert "Another model served" not in text
    assert (
        "Models served as requested, spelled otherwise: 'openai/gpt-4o-2024-08-06' for 'gpt-4o' "
        "(snapshot 2024-08-06; prefix openai/; 2 answers in 1 try)" in text
    )

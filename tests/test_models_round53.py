"""Fifty-third round: a host's prefix, a Bedrock id and another word order read as the model
requested; a judge's 413 naming its request's size; another model served shown by the report.

Classes of defect fixed:

- a served name that is the model requested on another route, or in another house's spelling,
  was flagged as another model (``differs: true``), as a router's fallback is: a host's or
  router's prefix (LiteLLM's ``azure/gpt-4o``, ``vertex_ai/``, ``bedrock/``, a router's
  ``openrouter/anthropic/claude-3.5-sonnet`` over the maker's prefix), Bedrock's model id
  (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``), the version written elsewhere among the
  words (``claude-4.5-sonnet`` for ``claude-sonnet-4-5``). Each is the model requested now,
  the entry saying how it was spelled (``host``, ``prefix``, ``version``, ``reordered``);
  another model behind a host's prefix, two hosts, two Bedrock versions, other numbers, an
  Azure deployment's own name still differ;
- a judge refused with a 413 (its request's bytes over what its route takes) advised "a
  judge model with a larger window", which does not help: it names the request's size now;
- the report said nothing of another model served: ``models_served`` was in each try's
  record alone, so a batch whose answers came from ``gpt-4o-mini`` when ``gpt-4o`` was
  requested reported as any other. ``report``, ``report --json`` and ``run --json`` give the
  batch's served models (each with its answers and tries, read again by this reading), and the
  terminal report names another model served.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.records import AgentRun
from groundstate.runner import BatchConfig, plan_batch
from groundstate.spec.suite import Suite
from groundstate.spec.system import load_system
from groundstate.store import RunStore
from groundstate.testing import FunctionAgent, attempt, scripted_system
from groundstate.testing_models import Raw
from groundstate.trace import ModelCallEvent

from .judged_bank import judged_run
from .model_harness import PROVIDERS, TASK, Harness, _harness
from .test_model_judges import Judged, always, judged  # noqa: F401 (the fixture)
from .test_models_round17 import _oracle
from .test_models_round52 import NGINX_413


def _harness_of(provider: str, monkeypatch: pytest.MonkeyPatch, retail: Suite) -> Harness:
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    return _harness(chosen, monkeypatch, retail)


def _served_run(
    provider: str, asked: str, named: str, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> AgentRun:
    """An oracle's attempt through the real SDK, each answer naming *named*."""
    script = [dataclasses.replace(r, model=named) for r in _oracle(retail)]
    run = _harness_of(provider, monkeypatch, retail).run(script, revision=asked)
    assert run.terminal_reason == "success", run.infrastructure_status
    return run


# --- a host's prefix, a Bedrock id, another word order --------------------------------------


@pytest.mark.parametrize(
    ("asked", "named", "spelling"),
    [
        ("gpt-4o", "azure/gpt-4o", {"host": "azure/"}),
        ("azure/gpt-4o", "gpt-4o-2024-08-06", {"snapshot": "2024-08-06", "host": "azure/"}),
        ("Azure/GPT-4o", "gpt-4o", {"host": "Azure/"}),
        (
            "claude-3-5-sonnet",
            "openrouter/anthropic/claude-3.5-sonnet",
            {"prefix": "anthropic/", "host": "openrouter/"},
        ),
        (
            "openrouter/anthropic/claude-sonnet-4.5",
            "claude-sonnet-4-5-20250929",
            {"snapshot": "2025-09-29", "prefix": "anthropic/", "host": "openrouter/"},
        ),
        ("gpt-4o", "azure/openai/gpt-4o", {"prefix": "openai/", "host": "azure/"}),
        (
            "vertex_ai/claude-sonnet-4-5",
            "claude-sonnet-4-5@20250929",
            {"snapshot": "2025-09-29", "host": "vertex_ai/"},
        ),
        (
            "claude-sonnet-4-5",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            {"snapshot": "2025-09-29", "prefix": "anthropic.", "version": "v1:0"},
        ),
        (
            "claude-sonnet-4-5",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            {"snapshot": "2025-09-29", "prefix": "us.anthropic.", "version": "v1:0"},
        ),
        (
            "bedrock/us.anthropic.claude-3-haiku-20240307-v1:0",
            "claude-3-haiku-20240307",
            {"prefix": "us.anthropic.", "host": "bedrock/", "version": "v1:0"},
        ),
        (
            "claude-3-haiku",
            "anthropic.claude-3-haiku-20240307-v1:0:200k",
            {"snapshot": "2024-03-07", "prefix": "anthropic.", "version": "v1:0"},
        ),
        (
            "mistral-large-2407",
            "mistral.mistral-large-2407-v1:0",
            {"prefix": "mistral.", "version": "v1:0"},
        ),
        ("amazon/nova-pro", "amazon.nova-pro-v1:0", {"prefix": "amazon/", "version": "v1:0"}),
        ("claude-sonnet-4-5", "claude-4.5-sonnet", {"reordered": "version"}),
        (
            "claude-4.5-sonnet",
            "anthropic/claude-sonnet-4.5",
            {"reordered": "version", "prefix": "anthropic/"},
        ),
        ("claude-3-opus", "claude-opus-3", {"reordered": "version"}),
        (
            "claude-4.5-sonnet",
            "claude-sonnet-4-5-20250929",
            {"snapshot": "2025-09-29", "reordered": "version"},
        ),
        (
            "claude-3-5-sonnet-latest",
            "claude-sonnet-3-5-20241022",
            {"snapshot": "2024-10-22", "reordered": "version"},
        ),
        ("gemini-1.5-pro", "gemini-pro-1.5-002", {"revision": "002", "reordered": "version"}),
        # another model
        ("gpt-4o", "azure/gpt-4o-mini", None),
        ("azure/gpt-4o", "gpt-4o-mini-2024-07-18", None),
        ("azure/gpt-4o", "bedrock/gpt-4o", None),
        ("azure/prod-chat", "gpt-4o-2024-08-06", None),  # a deployment's own name
        ("gpt-4o", "azure/anthropic/gpt-4o", None),
        ("gpt-4o", "myproxy/gpt-4o", None),
        ("claude-sonnet-4-5", "anthropic.claude-haiku-4-5-20251001-v1:0", None),
        ("claude-sonnet-4-5", "anthropic.claude-sonnet-4-20250514-v1:0", None),
        ("claude-3-5-sonnet-20240620", "anthropic.claude-3-5-sonnet-20241022-v2:0", None),
        (
            "anthropic.claude-3-5-sonnet-20241022-v1:0",
            "anthropic.claude-3-5-sonnet-20241022-v2:0",
            None,
        ),
        ("claude-sonnet-4-5", "openai.claude-sonnet-4-5-v1:0", None),  # not its maker
        ("claude-sonnet-4-5", "claude-sonnet-4-5-v1:0", None),  # no Bedrock id
        ("claude-sonnet-4-5", "anthropic.claude-sonnet-4-5", None),
        ("claude-sonnet-4-5", "claude-5-4-sonnet", None),
        ("claude-sonnet-4-5", "claude-4-sonnet-5", None),
        ("claude-sonnet-4", "claude-4.5-sonnet", None),
        ("claude-3-5-sonnet", "claude-3-5-haiku", None),
        ("claude-3-5-sonnet", "claude-haiku-3-5", None),
        ("gemini-1.5-pro", "gemini-pro-1.5-2", None),
        ("gpt-4o", "4o-gpt", None),
    ],
)
def test_what_is_the_model_requested(
    asked: str, named: str, spelling: dict[str, str] | None
) -> None:
    from groundstate.served import same_model

    assert same_model(asked, named) == spelling


def test_a_long_served_name_is_read_in_linear_time() -> None:
    from groundstate.served import same_model

    started = time.perf_counter()
    for named in (
        "us.anthropic." + "claude-v1:" * 10_000,
        "a.b." * 20_000 + "-v1:0",
        "claude-" + "1-" * 30_000 + "sonnet",
        "azure/" * 20_000,
        "us.anthropic.claude" + "-v1" * 20_000 + ":0",
        "bedrock/us.anthropic.claude-sonnet-" + "4-" * 30_000 + "5-20250929-v1:0",
    ):
        assert same_model("claude-sonnet-4-5", named) is None
    assert time.perf_counter() - started < 0.5


@pytest.mark.parametrize(
    ("provider", "asked", "named", "spelling"),
    [
        (
            "openai",
            "gpt-4o",
            "azure/gpt-4o-2024-08-06",
            {"snapshot": "2024-08-06", "host": "azure/"},
        ),
        (
            "anthropic",
            "claude-sonnet-4-5",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            {"snapshot": "2025-09-29", "prefix": "us.anthropic.", "version": "v1:0"},
        ),
        ("anthropic", "claude-4.5-sonnet", "claude-sonnet-4-5", {"reordered": "version"}),
    ],
)
def test_the_model_requested_on_another_route_does_not_differ(
    provider: str,
    asked: str,
    named: str,
    spelling: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    retail: Suite,
) -> None:
    """Through the real SDKs: the record says it is the model asked for, and how spelled."""
    run = _served_run(provider, asked, named, monkeypatch, retail)
    (served,) = run.infrastructure_status["models_served"]
    answers = sum(isinstance(e, ModelCallEvent) for e in run.observation_action_log)
    assert (
        served
        == {
            "requested": asked,
            "served": named,
            "answers": answers,
            "differs": False,
        }
        | spelling
    )


# --- a judge's 413 ---------------------------------------------------------------------------


def test_a_judges_413_names_the_requests_size_not_a_window(judged: Judged) -> None:  # noqa: F811
    judged.serve(always(Raw(NGINX_413, status=413, headers={"content-type": "text/html"})))
    run, result = judged_run(judged.load(judged.judge()))
    assert result.error is not None and not result.passed
    assert "the judge's prompt outgrew its API's request size (the instrument's" in result.error
    assert (
        "a request of about " in result.error and " bytes; a route that takes more" in result.error
    )
    size = int(result.error.split("a request of about ")[1].split(" bytes")[0].replace(",", ""))
    assert size > 100
    assert "window" not in result.error.split("): ")[0]
    assert result.error.endswith("413 Request Entity Too Large")
    assert run.terminal_reason == "success"


# --- the report shows the models served -----------------------------------------------------


def _stored(
    tmp_path: Path, retail: Suite, runs: list[AgentRun], provider: str = "openai"
) -> tuple[Path, str]:
    """A store holding *runs* as the attempts of one batch of *TASK*."""
    (chosen,) = [p for p in PROVIDERS if p.name == provider]
    batch = plan_batch(
        retail, load_system(chosen.system_file), BatchConfig(attempts=len(runs), tasks=(TASK,))
    )
    store = tmp_path / "runs.db"
    with RunStore(store) as stored:
        stored.add_batch(batch)
        for number, run in enumerate(runs, 1):
            update = {"batch_id": batch.batch_id, "attempt": number, "run_id": uuid.uuid4().hex}
            stored.add_run(run.model_copy(update=update), {})
    return store, batch.batch_id


def _report(store: Path, batch_id: str, *flags: str) -> str:
    result = CliRunner().invoke(main, ["report", batch_id, *flags, "--store", str(store)])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_report_names_another_model_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """Answers from ``gpt-4o-mini`` for ``gpt-4o`` were in each try's record alone: the report
    said nothing. ``report --json`` gives the batch's served models, the text names it."""
    mini = _served_run("openai", "gpt-4o", "gpt-4o-mini", monkeypatch, retail)
    azure = _served_run("openai", "gpt-4o", "azure/gpt-4o-2024-08-06", monkeypatch, retail)
    store, batch_id = _stored(tmp_path, retail, [mini, azure, mini])
    per_try = len(mini.infrastructure_status["models_served"])
    answers = mini.infrastructure_status["models_served"][0]["answers"]
    data = json.loads(_report(store, batch_id, "--json"))
    assert per_try == 1 and data["models_served"] == [
        {
            "requested": "gpt-4o",
            "served": "gpt-4o-mini",
            "answers": 2 * answers,
            "differs": True,
            "tries": 2,
        },
        {
            "requested": "gpt-4o",
            "served": "azure/gpt-4o-2024-08-06",
            "answers": answers,
            "differs": False,
            "snapshot": "2024-08-06",
            "host": "azure/",
            "tries": 1,
        },
    ]
    text = " ".join(_report(store, batch_id).split())
    assert (
        f"ANOTHER MODEL SERVED: 'gpt-4o-mini' for 'gpt-4o' ({2 * answers} answers in 2 tries)"
        in text
    )
    assert (
        "models served as requested, spelled otherwise: 'azure/gpt-4o-2024-08-06' for 'gpt-4o' "
        f"(snapshot 2024-08-06; host azure/; {answers} answers in 1 try)" in text
    )


def test_report_of_the_model_requested_names_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    same = _served_run("anthropic", "claude-sonnet-4-5", "claude-sonnet-4-5", monkeypatch, retail)
    store, batch_id = _stored(tmp_path, retail, [same], "anthropic")
    (entry,) = json.loads(_report(store, batch_id, "--json"))["models_served"]
    assert entry["differs"] is False and entry["tries"] == 1
    text = _report(store, batch_id)
    assert "ANOTHER MODEL" not in text and "spelled otherwise" not in text


def test_report_of_agents_naming_no_model_has_no_served_models(
    tmp_path: Path, retail: Suite
) -> None:
    async def scripted(session: Any) -> str:
        return "Nothing done."

    run = attempt(retail, TASK, FunctionAgent(scripted), system=scripted_system()).run
    store, batch_id = _stored(tmp_path, retail, [run])
    assert json.loads(_report(store, batch_id, "--json"))["models_served"] == []
    assert "SERVED" not in _report(store, batch_id)


def test_an_older_records_reading_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, retail: Suite
) -> None:
    """A try recorded before a spelling was known (round 52 flagged ``azure/``) is shown as
    this reading reads it; an entry that is none (no name, no count) is passed over."""
    from groundstate.served import served_in_batch

    old = [
        {"requested": "gpt-4o", "served": "azure/gpt-4o", "answers": 3, "differs": True},
        {"requested": "gpt-4o", "served": "gpt-4o-mini", "answers": 2, "differs": False},
        {"requested": "gpt-4o", "served": 7, "answers": 1, "differs": True},
        {"requested": "gpt-4o", "served": "x", "answers": True, "differs": True},
        "gpt-4o",
    ]
    assert served_in_batch([old, None, "text", [old[0]]]) == [
        {"requested": "gpt-4o", "served": "gpt-4o-mini", "answers": 2, "differs": True, "tries": 1},
        {
            "requested": "gpt-4o",
            "served": "azure/gpt-4o",
            "answers": 6,
            "differs": False,
            "host": "azure/",
            "tries": 2,
        },
    ]

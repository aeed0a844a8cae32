"""Scale and test-suite time, fourteenth round: what the cheaper paths must still find."""

from __future__ import annotations

import json
import shutil
import ssl
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import groundstate.gateway
import groundstate.grading.terminal
from groundstate import whole_request
from groundstate.bindings import HARNESS, Bindings
from groundstate.environments import sqlite as sqlite_env
from groundstate.environments.base import Environment
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import SpecError
from groundstate.gateway import ToolGateway
from groundstate.spec.suite import load_suite
from groundstate.tau2.importer import _dumped
from groundstate.tools import Tool, declared_tools
from groundstate.validation import checks as validation_checks
from groundstate.validation.checks import check_tool_robustness
from groundstate.validation.replay import Proof
from groundstate.validation.robustness import ToolCrash
from groundstate.whole_request import sdk_httpx, size_bounded_async_client, whole_request_client

from .conftest import BANK

# --- the rebinding check's fast path ------------------------------------------------------------


def _armed() -> Bindings:
    """The harness's bindings, checked twice clean: the second look takes the namespaces'
    versions as seen, so the next one may skip the names of namespaces not written since."""
    HARNESS.rebase()
    assert HARNESS.put_back() == [] and HARNESS.put_back() == []
    return HARNESS


def _fake(*args: object, **kwargs: object) -> str:
    return "success"


def _rebind_function() -> None:
    groundstate.grading.terminal.classify = _fake


def _rebind_method() -> None:
    ToolGateway.call = _fake  # type: ignore[method-assign,assignment]


def _shadow_builtin() -> None:
    vars(groundstate.gateway)["isinstance"] = _fake


def _rebind_json() -> None:
    json.dumps = _fake


def _replace_module() -> None:
    sys.modules["groundstate.gateway"] = type(sys)("groundstate.gateway")


@pytest.mark.parametrize(
    ("tamper", "named"),
    [
        (_rebind_function, "groundstate.grading.terminal.classify"),
        (_rebind_method, "groundstate.gateway.ToolGateway.call"),
        (_shadow_builtin, "groundstate.gateway.isinstance"),
        (_rebind_json, "json.dumps"),
        (_replace_module, "sys.modules['groundstate.gateway']"),
    ],
)
def test_a_rebinding_after_clean_looks_is_still_found_and_put_back(
    tamper: Callable[[], None], named: str
) -> None:
    """Each namespace's version is read instead of its names once all were found unchanged;
    a write to one moves its version, so every kind of rebinding is still named and undone."""
    classify, call, dumps = groundstate.grading.terminal.classify, ToolGateway.call, json.dumps
    gateway = sys.modules["groundstate.gateway"]
    bindings = _armed()
    tamper()
    try:
        assert named in bindings.put_back()
        assert groundstate.grading.terminal.classify is classify
        assert ToolGateway.call is call
        assert json.dumps is dumps
        assert sys.modules["groundstate.gateway"] is gateway
        assert "isinstance" not in vars(gateway)
        assert bindings.put_back() == []
    finally:
        groundstate.grading.terminal.classify, json.dumps = classify, dumps
        ToolGateway.call = call  # type: ignore[method-assign]
        sys.modules["groundstate.gateway"] = gateway
        vars(gateway).pop("isinstance", None)
        HARNESS.rebase()


def test_a_lawful_write_to_a_watched_module_is_not_a_rebinding() -> None:
    """A module gaining data of its own (a lazy global; not code, and since the twenty-second
    round not over a name it had: every name first seen is held) moves its version: the names
    are looked at again, found as first seen, and the new version taken as seen."""
    bindings = _armed()
    module = groundstate.grading.terminal
    try:
        vars(module)["_lazily_set"] = "changed"
        assert bindings.put_back() == []
        assert bindings.put_back() == []
        groundstate.grading.terminal.classify = _fake
        assert bindings.put_back() == ["groundstate.grading.terminal.classify"]
    finally:
        vars(module).pop("_lazily_set", None)
        HARNESS.rebase()


# --- fixture builds by content --------------------------------------------------------------------

FIXTURE_SQL = (
    "CREATE TABLE orders(id INTEGER PRIMARY KEY AUTOINCREMENT, status TEXT);\n"
    "INSERT INTO orders(status) VALUES ('pending'), ('shipped');\n"
)


def _builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    built: list[Path] = []
    real = sqlite_env._template_image

    def counted(fixture: Path, content: bytes, clock: datetime) -> bytes:
        built.append(fixture)
        return real(fixture, content, clock)

    monkeypatch.setattr(sqlite_env, "_template_image", counted)
    return built


def test_the_same_fixture_at_two_paths_and_two_clocks_is_built_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An importer writes one fixture per task, most alike, and validation builds each at the
    conformance clock too: the fixture's SQL runs once per content, and each clock's image
    holds its own clock, which a reset brings back."""
    text = FIXTURE_SQL + f"-- {tmp_path}\n"  # content no other test builds
    first, second = tmp_path / "a.sql", tmp_path / "copy" / "a.sql"
    second.parent.mkdir()
    for path in (first, second):
        path.write_text(text)
    built = _builds(monkeypatch)
    noon, later = datetime(2024, 5, 15, 12), datetime(2031, 1, 2, 3, 4, 5)
    with SqliteEnvironment(first, clock=noon) as a, SqliteEnvironment(second, clock=noon) as b:
        assert a.state_hash() == b.state_hash()
    with SqliteEnvironment(second, clock=later) as c:
        assert c.now() == later
        c.advance_clock(60)
        with c.tool_transaction():
            c.agent_db.execute("INSERT INTO orders(status) VALUES ('new')")
        c.reset()
        assert c.now() == later
        assert [r[0] for r in c.evaluator_view().query("SELECT status FROM orders")] == [
            "pending",
            "shipped",
        ]
    assert built == [first]
    with SqliteEnvironment(first, clock=noon) as a:
        assert a.now() == noon


def test_a_fixture_edited_in_place_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fixture = tmp_path / "f.sql"
    fixture.write_text(FIXTURE_SQL + f"-- {tmp_path}\n")
    built = _builds(monkeypatch)
    clock = datetime(2024, 5, 15, 12)
    with SqliteEnvironment(fixture, clock=clock) as env:
        before = env.state_hash()
    fixture.write_text(FIXTURE_SQL + "INSERT INTO orders(status) VALUES ('lost');\n")
    with SqliteEnvironment(fixture, clock=clock) as env:
        assert env.state_hash() != before
    assert built == [fixture, fixture]


# --- tool robustness of a copied suite ------------------------------------------------------------


def test_a_copy_of_a_suite_shares_tool_robustness_verdicts_and_an_edited_copy_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validation's property-based tool calls (most of validating a small task) depend on the
    tools' code, the fixture's content, the clock and the permissions, not on the folder: a
    copy of the suite reuses them; a copy whose tools changed is checked anew."""
    searched: list[str] = []
    real = validation_checks.find_crash

    def counted(tool: Tool, make_env: Callable[[], Environment]) -> ToolCrash | None:
        searched.append(tool.name)
        return real(tool, make_env)

    monkeypatch.setattr(validation_checks, "_ROBUSTNESS", {})
    monkeypatch.setattr(validation_checks, "find_crash", counted)
    copies = [tmp_path / name for name in ("one", "two", "edited")]
    for root in copies:
        shutil.copytree(BANK, root)
    with (copies[2] / "tools.py").open("a") as tools:
        tools.write(
            "\n\n@tool\ndef shout(ctx: ToolContext, text: str) -> str:\n"
            '    """Upper case; breaks on an empty text."""\n'
            "    return text.upper()[0]\n"
        )
    task = copies[2] / "tasks" / "transfer.yaml"
    task.write_text(task.read_text().replace("available_tools: [", "available_tools: [shout, "))
    verdicts = []
    for root in copies:
        suite = load_suite(root)
        verdicts.append(check_tool_robustness(Proof(suite, suite.tasks["transfer"])))
    tools = len(load_suite(copies[0]).tasks["transfer"].available_tools)
    assert verdicts[0] == verdicts[1] and "shout" not in verdicts[0][1], verdicts
    assert len(searched) == 2 * tools + 1  # the first copy's, then the edited copy's
    assert 'shout({"text":""}) -> IndexError' in verdicts[2][1], verdicts[2]


# --- the τ² importer's YAML ----------------------------------------------------------------------


@given(st.text(), st.lists(st.text(alphabet=st.characters(max_codepoint=0x7F)), max_size=3))
@settings(max_examples=300, deadline=None, derandomize=True)
def test_what_the_importer_writes_reads_back_as_written(text: str, ascii_texts: list[str]) -> None:
    """A text the dump wrote all in ASCII is no longer read back to be checked: it is the
    escaped form the check would fall back to, so every text still reads back unchanged."""
    data = {"request": text, "steps": ascii_texts, text[:5] or "k": {"note": "\x85" + text}}
    assert yaml.safe_load(_dumped(data)) == data


# --- model clients --------------------------------------------------------------------------------


def test_model_clients_load_the_certificate_store_once_per_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Every attempt of a model agent (and a model user) builds an SDK client; its SSL
    context, which loads the system's certificate store, is built once per process and
    SSL_CERT_FILE / SSL_CERT_DIR, and is the one httpx would build."""
    import openai

    httpx = sdk_httpx(openai)
    made: list[object] = []
    real = httpx.create_ssl_context

    def counted() -> object:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(whole_request, "_CONTEXTS", {})
    monkeypatch.setattr(httpx, "create_ssl_context", counted)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    clients = [size_bounded_async_client(openai) for _ in range(3)]
    clients.append(whole_request_client(openai, 5.0))
    assert len(made) == 1
    assert isinstance(made[0], ssl.SSLContext) and made[0].verify_mode == ssl.CERT_REQUIRED
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "none.pem"))
    with pytest.raises(OSError):  # that setting's own store, read when it is first used
        size_bounded_async_client(openai)
    monkeypatch.delenv("SSL_CERT_FILE")
    size_bounded_async_client(openai)
    assert len(made) == 1
    clients[-1].close()  # the synchronous one


# --- tool schemas checked once per text ---------------------------------------------------------


def _declaring(*tools: Tool) -> SimpleNamespace:
    return SimpleNamespace(**{t.name: t for t in tools})


def _noop(ctx: object) -> None:
    """Does nothing."""


def test_a_tool_schema_is_judged_by_all_of_it_however_often_it_is_loaded(
    tmp_path: Path,
) -> None:
    """A schema's verdict is kept by its JSON text; one whose text does not say all of it (a
    tuple where JSON Schema wants an array) is checked on its own, before and after the list
    form with the same text, and a refused schema is refused on every load."""
    good = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    tupled = {**good, "required": ("a",)}
    bad = {**good, "properties": {"a": {"type": "text"}}}
    where = tmp_path / "tools.py"
    for _ in range(2):
        with pytest.raises(SpecError, match="not valid JSON Schema"):
            declared_tools(_declaring(Tool("t", "d", tupled, _noop)), where)
        assert set(declared_tools(_declaring(Tool("t", "d", good, _noop)), where)) == {"t"}
        with pytest.raises(SpecError, match=r"parameters\['properties'\]\['a'\]\['type'\]"):
            declared_tools(_declaring(Tool("t", "d", bad, _noop)), where)

"""Bad input, fifty-first round: agent parameters of the wrong type, entries that are no callable,
factories and classes read before anything runs.

- **An agent parameter of the wrong type was found after the suite was validated.**
  ``max_steps: "ten"`` for ``async def agent(session, max_steps: int = 10)`` was refused only
  when the agent's file was imported, after the whole suite validated. Annotations of builtin
  types (``int``, ``float | None``, ``list[str]``, ``Optional[int]``, ``"int"``, a
  ``**kwargs: int``) are read from the file's text now, as the system loads, and refused in
  the words importing it says (``harness.orchestration_loop.params.max_steps: must be a whole
  number, not 'ten'``). A name the file binds itself (``int = MyInt``), or a type of its own,
  is left to the import.
- **An entry bound to no callable passed the text's check.** ``agent = 42``, ``agent = "x"``,
  a list, a dict, an f-string or ``agent: int`` alone is refused as the system loads (``names
  no callable: 'agent' is 42``); a name bound to a call, another name, a lambda, or bound
  twice or unseen is left to the import.
- **Only an ``async def`` entry's parameters were read.** A plain factory (``def make(n:
  int)``), a class of no base (its ``__init__``, or none: ``object``'s) and a standard
  ``@dataclass`` (its fields) are read too; a decorated function, a class with a base, a
  metaclass or ``from_system``, a dataclass with ``field()`` or ``KW_ONLY`` are left to the
  import.
- An unstamped store of an older generation still migrates (a store missing a table made
  together with one it has is not refused: older stores were made so, e.g. ``chains`` without
  ``leases``; refusing them failed the store tests in CI).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from groundstate.errors import SpecError
from groundstate.spec.system import load_system
from groundstate.store import _GENERATIONS, RunStore
from tests.test_imports_formats import Store

MARK = "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n"
RUN = "    async def run(self, session):\n        return None\n"
DATACLASS = "from dataclasses import dataclass\n@dataclass\nclass agent:\n"


def _system(tmp_path: Path, agent: str, params: str) -> Path:
    (tmp_path / "agent.py").write_text(MARK + agent)
    path = tmp_path / "system.yaml"
    path.write_text(
        f"harness:\n  orchestration_loop:\n    entry: agent.py:agent\n    params: {params}\n"
    )
    return path


def _refused(tmp_path: Path, agent: str, params: str) -> SpecError:
    system = _system(tmp_path, agent, params)
    with pytest.raises(SpecError) as caught:
        load_system(system)
    assert caught.value.path == str(system)
    assert not (tmp_path / "ran").exists()  # none of the file ran
    return caught.value


def _loads(tmp_path: Path, agent: str, params: str) -> None:
    assert load_system(_system(tmp_path, agent, params)).resolved["code"]
    assert not (tmp_path / "ran").exists()


# --- parameters of the wrong type --------------------------------------------------------

WRONG_TYPES = [
    ("async def agent(session, max_steps: int = 10):\n    pass\n", "{max_steps: ten}",
     "max_steps", "must be a whole number, not 'ten'"),
    ("async def agent(session, *, t: float | None = None):\n    pass\n", "{t: hot}",
     "t", "must be a number or null, not 'hot'"),
    ("async def agent(session, **params: int):\n    pass\n", "{retries: many}",
     "retries", "must be a whole number, not 'many'"),
    ("from typing import Optional\nasync def agent(session, n: Optional[int] = None):\n"
     "    pass\n", "{n: x}", "n", "must be a whole number or null, not 'x'"),
    ("import typing\nasync def agent(session, n: typing.Optional[int] = None):\n    pass\n",
     "{n: x}", "n", "must be a whole number or null, not 'x'"),
    ("async def agent(session, tools: 'list[str]' = ()):\n    pass\n", "{tools: [1]}",
     "tools", "must be a list of text, not [1]"),
    ("async def agent(session, limits: dict[str, int] | None = None):\n    pass\n",
     "{limits: {a: b}}", "limits", "must be a mapping of text to a whole number or null"),
    ("async def agent(session, verbose: bool = False):\n    pass\n", "{verbose: 1}",
     "verbose", "must be true or false, not 1"),
    ("async def agent(session, name: str = 'a'):\n    pass\n", "{name: 3}",
     "name", "must be text, not 3"),
    ("def agent(max_steps: int = 3):\n    return None\n", "{max_steps: ten}",
     "max_steps", "must be a whole number, not 'ten'"),
    ("class agent:\n    def __init__(self, n: int):\n        self.n = n\n" + RUN, "{n: x}",
     "n", "must be a whole number, not 'x'"),
    (DATACLASS + "    n: int = 1\n" + RUN, "{n: x}", "n", "must be a whole number, not 'x'"),
    ("import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass agent:\n    n: int\n"
     + RUN, "{n: x}", "n", "must be a whole number, not 'x'"),
]  # fmt: skip


@pytest.mark.parametrize(("agent", "params", "key", "said"), WRONG_TYPES)
def test_a_parameter_of_the_wrong_type_is_refused_as_the_system_loads(
    tmp_path: Path, agent: str, params: str, key: str, said: str
) -> None:
    error = _refused(tmp_path, agent, params)
    assert error.field == f"harness.orchestration_loop.params.{key}"
    assert error.reason.startswith(said)


RIGHT_TYPES = [
    ("async def agent(session, max_steps: int = 10):\n    pass\n", "{max_steps: 5}"),
    ("async def agent(session, t: float = 0.5):\n    pass\n", "{t: 1}"),
    ("async def agent(session, t: int = None):\n    pass\n", "{t: null}"),  # None meant
    ("async def agent(session, *, t: float | None = None):\n    pass\n", "{t: null}"),
    ("async def agent(session, **params: int):\n    pass\n", "{a: 1, b: 2}"),
    ("async def agent(session, tools: list[str] = ()):\n    pass\n", "{tools: [a, b]}"),
    ("async def agent(session, verbose: bool = False):\n    pass\n", "{verbose: true}"),
    # the file's own names and types, read only by importing it
    ("int = str\nasync def agent(session, n: int = 1):\n    pass\n", "{n: x}"),
    ("class Mode:\n    pass\nasync def agent(session, mode: Mode = None):\n    pass\n",
     "{mode: fast}"),
    ("async def agent(session, mode: 'Mode' = None):\n    pass\n", "{mode: fast}"),
    ("import typing as t\nasync def agent(session, n: t.Optional[int] = None):\n    pass\n",
     "{n: x}"),
    ("from mytypes import Optional\nasync def agent(session, n: Optional[int] = None):\n"
     "    pass\n", "{n: x}"),
    ("from dataclasses import dataclass\nasync def agent(session, n: int = 1):\n    pass\n",
     "{n: 2}"),
]  # fmt: skip


@pytest.mark.parametrize(("agent", "params"), RIGHT_TYPES)
def test_a_parameter_its_annotation_takes_or_cannot_say_loads(
    tmp_path: Path, agent: str, params: str
) -> None:
    """Honest: of the type annotated, or of a type only importing the file can read."""
    if "mytypes" in agent:
        (tmp_path / "mytypes.py").write_text("Optional = list\n")
    _loads(tmp_path, agent, params)


# --- entries bound to no callable ---------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "what"),
    [
        ("agent = 42\n", "42"),
        ("agent = 'careful'\n", "'careful'"),
        ("agent = None\n", "None"),
        ("agent = [1, 2]\n", "[1, 2]"),
        ("agent = {'steps': 3}\n", "{'steps': 3}"),
        ("name = 'x'\nagent = f'{name}-agent'\n", "f'{name}-agent'"),
        ("agent: int = 42\n", "42"),
        ("agent: int\n", "only annotated, never assigned"),
        ("agent = [str(i) for i in range(3)]\n", "[str(i) for i in range(3)]"),
        ("agent = " + repr("x" * 200) + "\n", "'" + "x" * 56 + "..."),
    ],
)
def test_an_entry_bound_to_no_callable_is_refused_unrun(
    tmp_path: Path, agent: str, what: str
) -> None:
    error = _refused(tmp_path, agent, "{}")
    assert error.field == "harness.orchestration_loop.entry"
    assert error.reason == f"'agent.py:agent' names no callable: 'agent' is {what}"


def test_a_callable_a_value_was_meant_for_is_suggested(tmp_path: Path) -> None:
    agent = "agent = 3\nasync def agnet(session):\n    pass\n"
    assert _refused(tmp_path, agent, "{}").reason.endswith("is 3 (did you mean 'agnet'?)")


@pytest.mark.parametrize(
    "agent",
    [
        "def make():\n    return None\nagent = make()\n",  # a factory's result
        "async def careful(session):\n    pass\nagent = careful\n",
        "import functools\nasync def a(session, n=1):\n    pass\nagent = functools.partial(a)\n",
        "agent = lambda session: None\n",
        "agent = 42\nif True:\n    async def agent(session):\n        pass\n",  # bound twice
        "agent = 42\nglobals()['agent'] = lambda **p: None\n",  # bound unseen
        "agent = 42\ndef __getattr__(name):\n    return None\n",
        "agent = 'x'\ndel agent\nasync def agent(session):\n    pass\n",
    ],
)
def test_an_entry_its_text_may_bind_to_a_callable_loads(tmp_path: Path, agent: str) -> None:
    """Honest: a value only running the file shows, or a name bound more than once."""
    _loads(tmp_path, agent, "{}")


# --- factories and classes -------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        ("def agent(max_steps=3):\n    return None\n", "got an unexpected keyword argument"),
        ("def agent(*, mode):\n    return None\n", "missing a required argument: 'mode'"),
        ("class agent:\n" + RUN, "got an unexpected keyword argument 'max_step'"),
        ("class agent(object):\n    def __init__(self, max_steps=3):\n        pass\n" + RUN,
         "got an unexpected keyword argument 'max_step' (did you mean 'max_steps'?)"),
        (DATACLASS + "    max_steps: int = 3\n" + RUN,
         "got an unexpected keyword argument 'max_step' (did you mean 'max_steps'?)"),
        (DATACLASS + "    limit: 'ClassVar[int]' = 3\n" + RUN, "got an unexpected keyword"),
    ],
)  # fmt: skip
def test_a_factory_or_class_that_cannot_take_the_params_is_refused(
    tmp_path: Path, agent: str, said: str
) -> None:
    error = _refused(tmp_path, agent, "{max_step: 5}")
    assert error.field == "harness.orchestration_loop.params"
    assert said in error.reason


@pytest.mark.parametrize(
    "agent",
    [
        "def agent(**params):\n    return None\n",
        "def agent(session, max_step=1):\n    pass\n",  # a plain def: the import says so
        "import functools\n@functools.cache\ndef agent():\n    return None\n",
        "class Base:\n    pass\nclass agent(Base):\n" + RUN,
        "class agent(metaclass=type):\n" + RUN,
        "class agent:\n    @classmethod\n    def from_system(cls, system, **p):\n"
        "        return cls()\n" + RUN,
        "class agent:\n    def __new__(cls, **p):\n        return object.__new__(cls)\n" + RUN,
        "class agent:\n    if True:\n        def __init__(self, **p):\n            pass\n" + RUN,
        "import attrs\n@attrs.define\nclass agent:\n    max_steps: int = 1\n" + RUN,
        "from dataclasses import dataclass, field\n@dataclass\nclass agent:\n"
        "    max_step: int = field(default=1)\n" + RUN,
        "from dataclasses import dataclass, KW_ONLY\n@dataclass\nclass agent:\n"
        "    _: KW_ONLY\n    max_step: int = 1\n" + RUN,
        "from dataclasses import dataclass\n@dataclass(init=False)\nclass agent:\n" + RUN,
        DATACLASS + "    max_step: int = 1\n" + RUN,
        DATACLASS + "    max_step: 'int' = 1\n    def __init__(self, **p):\n        pass\n" + RUN,
        "def dataclass(c):\n    return c\n@dataclass\nclass agent:\n    x: int = 1\n" + RUN,
    ],
)
def test_a_factory_or_class_taking_the_params_or_unread_loads(tmp_path: Path, agent: str) -> None:
    """Honest: taking them, or built in a way only running the file shows."""
    if "attrs" in agent:
        (tmp_path / "attrs.py").write_text("def define(c):\n    return c\n")
    _loads(tmp_path, agent, "{max_step: 5}")


def test_a_long_agent_file_is_read_quickly(tmp_path: Path) -> None:
    body = "".join(f"def helper_{i}(x: int = 1):\n    return x\n" for i in range(20_000))
    agent = body + "async def agent(session, max_steps: int = 1):\n    pass\n"
    start = time.process_time()
    error = _refused(tmp_path, agent, "{max_steps: ten}")
    assert error.reason == "must be a whole number, not 'ten'"
    assert time.process_time() - start < 5


# --- an unstamped store of an older generation ----------------------------------------------


def _older(path: Path, drop: list[str]) -> None:
    """Make the store at *path* look like one from before the stamp, made before the
    generation after ``seals``, with *drop* dropped too."""
    later = [t for names in _GENERATIONS[4:] for t in names]
    with sqlite3.connect(path) as db:
        for table in [*later, *drop]:
            db.execute(f"DROP TABLE {table}")
        db.execute("PRAGMA application_id = 0")
    db.close()


def test_an_unstamped_store_of_an_older_generation_still_migrates(tmp_path: Path) -> None:
    """Honest: every table of its newest generation there, the later ones made."""
    store = Store(tmp_path)
    _older(store.path, [])
    with RunStore(store.path) as opened:
        assert opened.verify(store.earlier).ok
    with sqlite3.connect(store.path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    db.close()
    assert {t for names in _GENERATIONS for t in names} <= tables

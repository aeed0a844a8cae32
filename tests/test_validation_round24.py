"""Twenty-fourth validation audit: nondeterminism validation did not see.

- A tool or check drawing from a stream of its own (``random.Random()``, ``from random import
  Random``, a module-level ``_RNG = random.Random()``, ``random.SystemRandom()``) escaped
  ``grader_determinism``: only the ``random`` module's functions were skewed. Such a stream,
  unseeded or kept between attempts, now draws near each end of its range too; one seeded by
  the code where it is used (``random.Random(42)``) is left alone: its draws are the same in
  every attempt already.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundstate.spec.suite import Suite, load_suite, with_environment
from groundstate.validation.checks import validate_task
from groundstate.validation.skew import outside_reads, skewed

from .conftest import BANK


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "bank"
    shutil.copytree(BANK, root, ignore=shutil.ignore_patterns("__pycache__"))
    task_file = root / "tasks" / "transfer.yaml"  # no replay stopped by a busy machine
    task_file.write_text(task_file.read_text().replace("time_limit: 5", "time_limit: 60"))
    suite_file = root / "suite.yaml"
    config = {**yaml.safe_load(suite_file.read_text()), "mutation_testing": "off"}
    suite_file.write_text(yaml.safe_dump(config))
    return root


# --- a tool drawing from a stream of its own --------------------------------------------------

TRANSFER = '''

@tool
def transfer(ctx: ToolContext, source: str, target: str, amount: int) -> dict[str, Any]:
    """Move money between accounts; one call in a hundred meets a busy backend."""
    if {draw} < 0.01:
        raise ToolError("the backend is busy, try again later")
    ctx.db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, source))
    ctx.db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, target))
    cur = ctx.db.execute(
        "INSERT INTO transfers (source, target, amount, at) VALUES (?, ?, ?, ?)",
        (source, target, amount, ctx.now().isoformat()),
    )
    return {{"transfer_id": cur.lastrowid}}
'''

OWN_STREAMS = {
    "module-global": ("import random\n_RNG = random.Random()\n", "_RNG.random()"),
    "seeded-global": ("import random\n_RNG = random.Random(7)\n", "_RNG.random()"),
    "made-per-call": ("import random\n", "random.Random().random()"),
    "imported-class": ("from random import Random\n", "Random().random()"),
    "system": ("import random\n", "random.SystemRandom().random()"),
    "randrange": ("import random\n", "random.Random().randrange(100)"),
    "urandom": ("import os\n", "os.urandom(1)[0] / 256"),
    "imported-urandom": ("from os import urandom\n", "urandom(1)[0] / 256"),
    "secrets": ("import secrets\n", "secrets.randbelow(100) / 100"),
    "token": ("from secrets import token_hex\n", "int(token_hex(2), 16) / 65536"),
    "uuid4": ("import uuid\n", "int(uuid.uuid4().hex[:4], 16) / 65536"),
}


def _with_transfer(tmp_path: Path, head: str, draw: str) -> Suite:
    """The bank with its ``transfer`` tool failing when *draw* falls below 0.01."""
    root = _copy(tmp_path)
    tools = root / "tools.py"
    source = tools.read_text()
    start = source.index("@tool\ndef transfer")
    end = source.index("@tool\ndef read_audit")
    tools.write_text(source[:start] + source[end:] + "\n" + head + TRANSFER.format(draw=draw))
    return load_suite(root)


@pytest.fixture
def lucky(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every real stream draws 0.5 (``randrange`` and ``randbelow`` their middle, bytes
    0x80): the unskewed replays are lucky every time, so no test is left to chance."""
    monkeypatch.setattr(random.Random, "random", lambda self: 0.5)
    monkeypatch.setattr(random.Random, "_randbelow", lambda self, n: n // 2)
    monkeypatch.setattr(random.SystemRandom, "random", lambda self: 0.5)
    monkeypatch.setattr(random.SystemRandom, "_randbelow", lambda self, n: n // 2)
    monkeypatch.setattr(os, "urandom", lambda n: b"\x80" * n)
    monkeypatch.setattr(random.SystemRandom, "randbytes", lambda self, n: b"\x80" * n)


@pytest.mark.parametrize("case", sorted(OWN_STREAMS))
def test_a_tool_drawing_from_its_own_stream_fails(tmp_path: Path, case: str, lucky: None) -> None:
    head, draw = OWN_STREAMS[case]
    validity = validate_task(_with_transfer(tmp_path, head, draw), "transfer")
    check = validity.check("grader_determinism")
    assert validity.check("solvable").passed, validity.check("solvable").detail
    assert not check.passed, check.detail
    assert "a later attempt of oracle (replayed again in this process" in check.detail
    assert "chance near its lowest values" in check.detail


@pytest.mark.parametrize(
    "draw", ["random.Random(7).random()", "random.Random(source + target).random()"]
)
def test_a_stream_seeded_where_it_is_used_still_passes(
    tmp_path: Path, draw: str, lucky: None
) -> None:
    """Control: a stream seeded at each call draws the same in every attempt (0.5 here):
    skewing it would refuse a deterministic tool."""
    validity = validate_task(_with_transfer(tmp_path, "import random\n", draw), "transfer")
    check = validity.check("grader_determinism")
    assert check.passed, check.detail


def test_a_global_stream_reseeded_at_each_call_still_passes(tmp_path: Path, lucky: None) -> None:
    """Control: a module's stream that the tool seeds before drawing is deterministic."""
    head = "import random\n_RNG = random.Random()\n"
    draw = "(_RNG.seed(7), _RNG.random())[1]"
    validity = validate_task(_with_transfer(tmp_path, head, draw), "transfer")
    assert validity.check("grader_determinism").passed


# --- a check drawing from a stream of its own -------------------------------------------------

LUCKY_CHECK = '''

import random
from datetime import UTC, datetime

_RNG = random.Random()


def sampled(s0: Any, sT: Any) -> bool:
    """Checks one account picked at random (a careless spot check), or passes by chance."""
    return {draw} > 0.01 and money_conserved(s0, sT)[0]
'''


@pytest.mark.parametrize("draw", ["random.Random().random()", "_RNG.random()"])
def test_a_check_drawing_from_its_own_stream_fails(tmp_path: Path, draw: str, lucky: None) -> None:
    root = _copy(tmp_path)
    checks = root / "checks.py"
    checks.write_text(checks.read_text() + LUCKY_CHECK.format(draw=draw))
    task_file = root / "tasks" / "transfer.yaml"
    task_file.write_text(
        task_file.read_text().replace("checks.py:money_conserved", "checks.py:sampled")
    )
    validity = validate_task(load_suite(root), "transfer")
    check = validity.check("grader_determinism")
    assert validity.check("solvable").passed
    assert not check.passed, check.detail
    assert "gradings of one final state disagree" in check.detail


def test_the_bank_still_passes(tmp_path: Path) -> None:
    """Control: tools and checks that draw nothing."""
    validity = validate_task(load_suite(_copy(tmp_path)), "transfer")
    assert validity.check("grader_determinism").passed


def test_the_streams_are_put_back(tmp_path: Path) -> None:
    """A module's stream, and the classes it bound, are its own again after the gradings."""
    namespace: dict[str, object] = {"_RNG": random.Random(), "Random": random.Random}
    original = namespace["_RNG"]
    with skewed(True, [namespace], process_wide=False):
        inside = namespace["_RNG"]
        assert inside is not original and isinstance(inside, random.Random)
        assert inside.random() > 0.99
        made = namespace["Random"]
        assert isinstance(made, type) and made(3).random() == random.Random(3).random()
        seeded, real = made(5), random.Random(5)  # the same draws as the real class's
        assert [seeded.randrange(1000) for _ in range(9)] == [
            real.randrange(1000) for _ in range(9)
        ]
        assert seeded.sample(range(50), 5) == real.sample(range(50), 5)
        assert made().randrange(1000) >= 999 - 1  # unseeded: near the top
    assert namespace == {"_RNG": original, "Random": random.Random}


def test_the_standard_librarys_other_chance_is_skewed_and_put_back() -> None:
    """``os.urandom``, ``secrets`` and ``uuid.uuid4``, as the suite's code bound them, draw
    near each end of their range while inside, and are the real ones again after."""
    import secrets
    import uuid

    namespace: dict[str, object] = {
        "os": os,
        "secrets": secrets,
        "uuid": uuid,
        "uuid4": uuid.uuid4,
        "token_hex": secrets.token_hex,
    }
    before = dict(namespace)
    for high, end in ((False, "00"), (True, "ff")):
        with skewed(high, [namespace], process_wide=False):
            seen: Any = namespace
            assert seen["os"].urandom(2).hex().startswith(end)
            assert seen["token_hex"](2).startswith(end)
            assert seen["uuid"].uuid4().hex.startswith(end) and seen["uuid4"]().hex[:2] == end
            assert seen["secrets"].randbelow(100) == (99 if high else 0)
            assert seen["os"].environ is not os.environ  # the module copy's other changes kept
    assert namespace == before


# --- a table whose assertions say only what it must not hold, on PostgreSQL -------------------

ABSENCE_ONLY = [
    {"id": "a-debited", "sql": "SELECT id FROM accounts WHERE id = 'A' AND balance != 70"},
    {"id": "b-credited", "sql": "SELECT id FROM accounts WHERE id = 'B' AND balance != 80"},
]
"""Assertions that hold when no row of A or B is left wrong: on an empty table too."""


def _postgres() -> Any:
    """The postgres kind's class, or a skip saying why it is not here."""
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    from groundstate.environments.postgres import PostgresEnvironment

    from .test_postgres import needs_postgres

    needs_postgres()
    return PostgresEnvironment


def _absence_only(tmp_path: Path, absence: bool = True) -> Suite:
    root = _copy(tmp_path)
    task_file = root / "tasks" / "transfer.yaml"
    task = yaml.safe_load(task_file.read_text())
    transfer = {"id": "transfer-row", "sql": "SELECT source, target, amount FROM transfers"}
    named = {"id": "balances", "sql": "SELECT id, balance FROM accounts WHERE id IN ('A', 'B')"}
    task["outcome_assertions"] = [
        {**transfer, "expect_rows": [["A", "B", 30]]},
        *(
            ({**a, "expect_rows": []} for a in ABSENCE_ONLY)
            if absence
            else [{**named, "expect_rows": [["A", 70], ["B", 80]]}]
        ),
    ]
    task.pop("partial_credit_rubric")
    task_file.write_text(yaml.safe_dump(task, sort_keys=False))
    return with_environment(load_suite(root), "postgres")


def test_postgres_a_table_passing_with_every_row_deleted_is_a_grader_gap(tmp_path: Path) -> None:
    """Only the SQLite kind could delete a table's rows for the probe: the same task on
    PostgreSQL passed ``grader_sensitivity``."""
    _postgres()
    validity = validate_task(_absence_only(tmp_path), "transfer")
    check = validity.check("grader_sensitivity")
    assert validity.check("solvable").passed, validity.check("solvable").detail
    assert not check.passed, check.detail
    assert (
        "grader gap: oracle's final state passes with every row of accounts deleted" in check.detail
    )
    assert "every row of transfers deleted" not in check.detail


def test_postgres_a_table_whose_rows_are_named_passes_with_none_deleted(tmp_path: Path) -> None:
    """Control: assertions naming the rows each table must hold."""
    _postgres()
    validity = validate_task(_absence_only(tmp_path, absence=False), "transfer")
    check = validity.check("grader_sensitivity")
    assert check.passed and "deleted" not in check.detail, check.detail


def test_postgres_clears_a_parent_table_past_its_foreign_keys_and_reset_undoes_it(
    tmp_path: Path,
) -> None:
    """Deleting a parent table's rows neither cascades into its children nor is refused for
    the child rows that now refer to nothing; the next reset brings every row back."""
    postgres = _postgres()
    fixture = tmp_path / "shop.sql"
    fixture.write_text(
        "CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT);\n"
        "CREATE TABLE items (id INTEGER PRIMARY KEY, order_id INTEGER NOT NULL "
        "REFERENCES orders(id) ON DELETE CASCADE, sku TEXT);\n"
        "INSERT INTO orders VALUES (1, 'open');\n"
        "INSERT INTO items VALUES (1, 1, 'sock');\n"
    )
    with postgres(fixture, clock=datetime(2026, 1, 15, 10, tzinfo=UTC)) as env:
        initial = env.reset()
        env.clear_collection("orders")
        assert env.evaluator_view().query("SELECT id FROM orders") == []
        assert env.evaluator_view().query("SELECT id FROM items") == [(1,)]
        assert env.state_hash() != initial
        assert env.reset() == initial
        assert env.evaluator_view().query("SELECT id, status FROM orders") == [(1, "open")]


# --- a check reading a file from outside the suite --------------------------------------------

READS = '''

import json
from pathlib import Path


def expected_from_file(s0: Any, sT: Any) -> bool:
    """Compares with expected balances kept {where}."""
    expected = json.loads({path}.read_text())
    rows = sT.query("SELECT id, balance FROM accounts WHERE id IN ('A', 'B') ORDER BY id")
    return [list(r) for r in rows] == expected
'''


def _reading(tmp_path: Path, path: str, where: str) -> Suite:
    root = _copy(tmp_path)
    checks = root / "checks.py"
    checks.write_text(checks.read_text() + READS.format(path=path, where=where))
    task_file = root / "tasks" / "transfer.yaml"
    task_file.write_text(
        task_file.read_text().replace("checks.py:money_conserved", "checks.py:expected_from_file")
    )
    return load_suite(root)


def test_a_check_reading_a_file_outside_the_suite_fails(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "expected.json"
    outside.parent.mkdir()
    outside.write_text('[["A", 70], ["B", 80]]')
    suite = _reading(tmp_path, f"Path({str(outside)!r})", "outside the suite")
    validity = validate_task(suite, "transfer")
    check = validity.check("grader_determinism")
    assert validity.check("solvable").passed, validity.check("solvable").detail
    assert not check.passed, check.detail
    assert f"a check reads {outside.resolve()}, outside the suite's folder" in check.detail


def test_a_check_reading_its_own_data_file_still_passes(tmp_path: Path) -> None:
    """Control: the same file shipped in the suite, opened from the check's ``__file__``."""
    suite = _reading(tmp_path, 'Path(__file__).parent / "expected.json"', "in the suite")
    (suite.root / "expected.json").write_text('[["A", 70], ["B", 80]]')
    validity = validate_task(load_suite(suite.root), "transfer")
    check = validity.check("grader_determinism")
    assert check.passed, check.detail


def test_outside_reads_sees_only_the_suite_codes_own_reads(tmp_path: Path) -> None:
    """What the watch notes: a read by the suite's code, through the standard library's
    file readers too; not a write, a read by other code, or one inside the suite."""
    root, elsewhere = tmp_path / "suite", tmp_path / "elsewhere"
    root.mkdir(), elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("x")
    (root / "own.txt").write_text("x")
    code = (
        "from pathlib import Path\n"
        "def read(p): return Path(p).read_text()\n"
        "def write(p): Path(p).write_text('y')\n"
    )
    namespace: dict[str, Any] = {"__name__": "suite_checks"}
    exec(compile(code, str(root / "checks.py"), "exec"), namespace)
    found: dict[str, None] = {}
    with outside_reads([namespace], root, found):
        namespace["read"](root / "own.txt")
        namespace["write"](elsewhere / "written.txt")
        (elsewhere / "data.txt").read_text()  # not the suite's code
        assert found == {}
        namespace["read"](elsewhere / "data.txt")
    namespace["read"](elsewhere / "written.txt")  # after: no watch
    assert list(found) == [str((elsewhere / "data.txt").resolve())]


AFTER_AN_AGENT = """
import json, sys
from pathlib import Path

from groundstate.bindings import refuse_audit_hooks

refuse_audit_hooks()  # as once an in-process agent has run
assert "groundstate.validation.skew" not in sys.modules
from groundstate.validation.skew import outside_reads

root, elsewhere = Path(sys.argv[1]), Path(sys.argv[2])
code = "from pathlib import Path\\ndef read(p): return Path(p).read_text()\\n"
namespace = {"__name__": "suite_checks"}
exec(compile(code, str(root / "checks.py"), "exec"), namespace)
found = {}
with outside_reads([namespace], root, found):
    namespace["read"](elsewhere / "data.txt")
print(json.dumps(list(found)))
"""


def test_outside_reads_are_seen_when_validation_is_imported_after_an_agent_ran(
    tmp_path: Path,
) -> None:
    """Before: the watch's audit hook was added as :mod:`groundstate.validation.skew` was
    imported; imported after an in-process agent had run, the hook was refused (dropped
    without a word, as ``sys.addaudithook`` does) and no read outside the suite was seen.
    The watch is now called from the hook :mod:`groundstate.bindings` added first. In a
    process of its own: audit hooks once refused stay refused."""
    root, elsewhere = tmp_path / "suite", tmp_path / "elsewhere"
    root.mkdir(), elsewhere.mkdir()
    (elsewhere / "data.txt").write_text("x")
    src = Path(__file__).resolve().parents[1] / "src"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", AFTER_AN_AGENT, str(root), str(elsewhere)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [str((elsewhere / "data.txt").resolve())]

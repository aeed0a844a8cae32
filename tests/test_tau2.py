"""The τ² importer on a small hand-made retail folder: tools, checks, conversion, CLI."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from groundstate.cli import main
from groundstate.environments.sqlite import SqliteEnvironment
from groundstate.errors import SpecError, ToolError
from groundstate.spec.suite import load_suite
from groundstate.tau2 import ImportOptions, import_tau2
from groundstate.tau2 import retail_checks as checks
from groundstate.tau2.fixture import fixture_from_db
from groundstate.tau2.policy import info_pattern
from groundstate.tools import ToolContext, load_tools
from groundstate.validation import validate_suite
from groundstate.validation.checks import check_tool_robustness
from groundstate.validation.replay import Proof
from tests.trace_builder import Trace

TOOLS = load_tools(Path(checks.__file__).with_name("retail_tools.py"))


def _user(uid: str, first: str, last: str, zip_code: str, methods: list[dict[str, Any]]) -> Any:
    return {
        "user_id": uid,
        "name": {"first_name": first, "last_name": last},
        "address": {
            "address1": "1 Elm St",
            "address2": "",
            "city": "Austin",
            "country": "USA",
            "state": "TX",
            "zip": zip_code,
        },
        "email": f"{uid}@example.com",
        "payment_methods": {m["id"]: m for m in methods},
        "orders": [],
    }


def _order(order_id: str, uid: str, status: str, items: list[tuple[str, float]], pay: str) -> Any:
    return {
        "order_id": order_id,
        "user_id": uid,
        "address": _user(uid, "", "", "73301", [])["address"],
        "items": [
            {
                "name": "Mug",
                "product_id": "100",
                "item_id": item_id,
                "price": price,
                "options": {"colour": "red"},
            }
            for item_id, price in items
        ],
        "status": status,
        "fulfillments": [],
        "payment_history": [
            {
                "transaction_type": "payment",
                "amount": round(sum(p for _, p in items), 2),
                "payment_method_id": pay,
            }
        ],
    }


def _variant(item_id: str, colour: str, price: float, available: bool = True) -> Any:
    return {
        "item_id": item_id,
        "options": {"colour": colour},
        "available": available,
        "price": price,
    }


DB = {
    "products": {
        "100": {
            "name": "Mug",
            "product_id": "100",
            "variants": {
                "1001": _variant("1001", "red", 10.0),
                "1002": _variant("1002", "blue", 12.5),
                "1003": _variant("1003", "green", 9.0),
                "1004": _variant("1004", "black", 11.0, available=False),
            },
        },
        "200": {
            "name": "Lamp",
            "product_id": "200",
            "variants": {"2001": _variant("2001", "white", 30.0)},
        },
    },
    "users": {
        "ann_lee_1": _user(
            "ann_lee_1",
            "Ann",
            "Lee",
            "73301",
            [
                {
                    "source": "credit_card",
                    "id": "credit_card_1",
                    "brand": "visa",
                    "last_four": "1111",
                },
                {"source": "gift_card", "id": "gift_card_1", "balance": 1.0},
                {"source": "paypal", "id": "paypal_1"},
            ],
        ),
        "bob_ray_2": _user(
            "bob_ray_2", "Bob", "Ray", "73301", [{"source": "paypal", "id": "paypal_2"}]
        ),
    },
    "orders": {
        "#W0000001": _order(
            "#W0000001", "ann_lee_1", "delivered", [("1001", 10.0)], "credit_card_1"
        ),
        "#W0000002": _order(
            "#W0000002", "ann_lee_1", "pending", [("1001", 10.0), ("1001", 10.0)], "gift_card_1"
        ),
        "#W0000003": _order("#W0000003", "bob_ray_2", "pending", [("1003", 9.0)], "paypal_2"),
    },
}
for _order_id, _record in DB["orders"].items():
    DB["users"][_record["user_id"]]["orders"].append(_order_id)


def _task(tid: str, actions: list[tuple[str, dict[str, Any]]], **criteria: Any) -> Any:
    return {
        "id": tid,
        "user_scenario": {
            "instructions": {
                "reason_for_call": criteria.pop("reason", "You want help with order #W0000001."),
                "known_info": "You are Ann Lee in zip code 73301.",
                "unknown_info": None,
                "task_instructions": "Be brief.",
            }
        },
        "evaluation_criteria": {
            "actions": [
                {"action_id": f"{tid}_{i}", "name": name, "arguments": args}
                for i, (name, args) in enumerate(actions)
            ],
            "communicate_info": criteria.get("communicate", []),
            "nl_assertions": criteria.pop("nl", None),
            # τ² grades communicate_info only with COMMUNICATE in the basis
            "reward_basis": ["DB", "COMMUNICATE"] if criteria.pop("communicate", []) else ["DB"],
        },
    }


AUTH = ("find_user_id_by_name_zip", {"first_name": "Ann", "last_name": "Lee", "zip": "73301"})
TASKS = [
    # a complete gold list: authenticate, read, exchange
    _task(
        "0",
        [
            AUTH,
            ("get_order_details", {"order_id": "#W0000001"}),
            ("get_product_details", {"product_id": "100"}),
            (
                "exchange_delivered_order_items",
                {
                    "order_id": "#W0000001",
                    "item_ids": ["1001"],
                    "new_item_ids": ["1002"],
                    "payment_method_id": "credit_card_1",
                },
            ),
        ],
    ),
    # only the write, as τ²'s later tasks give it: the importer adds the reads
    _task(
        "1",
        [("cancel_pending_order", {"order_id": "#W0000002", "reason": "no longer needed"})],
        reason="You want to cancel order #W0000002, you no longer need it.",
    ),
    # information only: nothing changes, the agent must say a price
    _task(
        "2",
        [AUTH, ("get_product_details", {"product_id": "200"})],
        communicate=["30.0"],
        reason="You want to know the price of the lamp.",
    ),
    # a gold action outside the documented interface
    _task("3", [("refund_everything", {"order_id": "#W0000001"})]),
    # a hand-over to a human
    _task("4", [AUTH, ("transfer_to_human_agents", {"summary": "wants a manager"})]),
]
POLICY = "# Retail agent policy\n\nAuthenticate the user first.\n"


@pytest.fixture
def tau2_dir(tmp_path: Path) -> Path:
    root = tmp_path / "tau2"
    root.mkdir()
    (root / "db.json").write_text(json.dumps(DB))
    (root / "tasks.json").write_text(json.dumps(TASKS))
    (root / "policy.md").write_text(POLICY)
    (root / "split_tasks.json").write_text(json.dumps({"base": ["0", "1", "2", "3", "4"]}))
    (tmp_path / "LICENSE").write_text("MIT License\n")
    return root


@pytest.fixture
def env(tmp_path: Path) -> Iterator[SqliteEnvironment]:
    fixture = tmp_path / "world.json"
    fixture.write_text(json.dumps(fixture_from_db(DB)))
    with SqliteEnvironment(fixture, clock=datetime(2024, 5, 15)) as environment:
        yield environment


def call(env: SqliteEnvironment, name: str, **args: Any) -> Any:
    with env.tool_transaction():
        return TOOLS[name].fn(ToolContext(env), **args)


def rows(env: SqliteEnvironment, sql: str) -> list[tuple[Any, ...]]:
    return env.evaluator_view().query(sql)


# --- tools --------------------------------------------------------------------------------


def test_calculate_reads_the_documented_language_and_refuses_the_rest(
    env: SqliteEnvironment,
) -> None:
    assert call(env, "calculate", expression="(2 + 3) * 4 / 3") == "6.67"
    assert call(env, "calculate", expression="-2 - -3") == "1.0"
    for bad in ("9**9**9", "2 +", "1/0", "(" * 80 + "1" + ")" * 80, "__import__('os')", "1e9"):
        with pytest.raises(ToolError):
            call(env, "calculate", expression=bad)
    with pytest.raises(ToolError, match="finite"):
        call(env, "calculate", expression="9" * 400 + " * 10")


def test_authentication_by_email_is_case_blind_and_by_zip_exact(env: SqliteEnvironment) -> None:
    assert call(env, "find_user_id_by_email", email="ANN_LEE_1@example.com") == "ann_lee_1"
    found = call(env, "find_user_id_by_name_zip", first_name="ann", last_name="LEE", zip="73301")
    assert found == "ann_lee_1"
    with pytest.raises(ToolError, match="User not found"):
        call(env, "find_user_id_by_name_zip", first_name="Ann", last_name="Lee", zip="7330")


def test_cancelling_refunds_a_gift_card_at_once_and_only_a_pending_order(
    env: SqliteEnvironment,
) -> None:
    order = call(env, "cancel_pending_order", order_id="#W0000002", reason="ordered by mistake")
    assert order["status"] == "cancelled" and order["cancel_reason"] == "ordered by mistake"
    assert order["payment_history"][-1] == {
        "transaction_type": "refund",
        "amount": 20.0,
        "payment_method_id": "gift_card_1",
    }
    assert rows(
        env, "SELECT balance FROM payment_methods WHERE payment_method_id = 'gift_card_1'"
    ) == [(21.0,)]
    with pytest.raises(ToolError, match="Non-pending"):
        call(env, "cancel_pending_order", order_id="#W0000002", reason="ordered by mistake")
    with pytest.raises(ToolError, match="Invalid reason"):
        call(env, "cancel_pending_order", order_id="#W0000003", reason="changed my mind")


def test_modifying_duplicate_items_prices_each_line_by_its_own_new_variant(
    env: SqliteEnvironment,
) -> None:
    # τ²'s own code gives both lines the last variant's price; ours keeps each its own
    order = call(
        env,
        "modify_pending_order_items",
        order_id="#W0000002",
        item_ids=["1001", "1001"],
        new_item_ids=["1002", "1003"],
        payment_method_id="credit_card_1",
    )
    assert [(i["item_id"], i["price"]) for i in order["items"]] == [("1002", 12.5), ("1003", 9.0)]
    assert order["status"] == "pending (item modified)"
    assert order["payment_history"][-1]["amount"] == 1.5
    with pytest.raises(ToolError, match="Non-pending"):  # only once per order
        call(
            env,
            "modify_pending_order_items",
            order_id="#W0000002",
            item_ids=["1002"],
            new_item_ids=["1001"],
            payment_method_id="credit_card_1",
        )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"item_ids": ["1001", "1001"], "new_item_ids": ["1002", "1002"]}, "Number of 1001"),
        ({"item_ids": ["1001"], "new_item_ids": ["2001"]}, "Variant not found"),
        ({"item_ids": ["1001"], "new_item_ids": ["1004"]}, "not found or available"),
        ({"item_ids": ["1001"], "new_item_ids": []}, "should match"),
    ],
)
def test_an_exchange_keeps_to_the_items_of_the_order_and_their_product(
    env: SqliteEnvironment, args: dict[str, Any], error: str
) -> None:
    with pytest.raises(ToolError, match=error):
        call(
            env,
            "exchange_delivered_order_items",
            order_id="#W0000001",
            payment_method_id="credit_card_1",
            **args,
        )


def test_a_gift_card_must_cover_a_price_difference_and_returns_go_to_the_original_method(
    env: SqliteEnvironment,
) -> None:
    with pytest.raises(ToolError, match="Insufficient gift card balance"):
        call(
            env,
            "exchange_delivered_order_items",
            order_id="#W0000001",
            item_ids=["1001"],
            new_item_ids=["1002"],
            payment_method_id="gift_card_1",
        )  # 2.50 is due, the card holds 1.00
    with pytest.raises(ToolError, match="original payment method"):
        call(
            env,
            "return_delivered_order_items",
            order_id="#W0000001",
            item_ids=["1001"],
            payment_method_id="paypal_1",
        )


def test_returns_record_the_items_and_the_method(env: SqliteEnvironment) -> None:
    order = call(
        env,
        "return_delivered_order_items",
        order_id="#W0000001",
        item_ids=["1001"],
        payment_method_id="gift_card_1",
    )
    assert order["status"] == "return requested"
    assert (order["return_items"], order["return_payment_method_id"]) == (["1001"], "gift_card_1")


def test_a_transfer_is_recorded_as_state(env: SqliteEnvironment) -> None:
    assert call(env, "transfer_to_human_agents", summary="help") == "Transfer successful"
    assert rows(env, "SELECT summary FROM transfers") == [("help",)]


# --- checks and patterns ------------------------------------------------------------------


ORDER_OUT = {"order_id": "#W0000002", "user_id": "ann_lee_1", "items": [{"item_id": "1001"}]}


def _check(fn: Any, trace: Trace) -> bool:
    passed, _ = fn(trace.events, None)
    return bool(passed)


def test_authentication_must_come_before_any_users_records() -> None:
    early = Trace("hi").call("get_order_details", {"order_id": "#W0000002"}, ORDER_OUT)
    assert not _check(checks.authenticated_first, early)
    refused = Trace("hi").call("get_order_details", {"order_id": "#W1"}, None, ok=False)
    assert _check(checks.authenticated_first, refused)  # a refused call reached nothing
    late = Trace("hi").call("find_user_id_by_email", {"email": "a"}, "ann_lee_1")
    assert _check(checks.authenticated_first, late.call("get_order_details", {}, ORDER_OUT))


def test_one_user_per_conversation() -> None:
    ann = Trace("hi").call("find_user_id_by_email", {"email": "a"}, "ann_lee_1")
    assert _check(checks.one_user, ann.call("get_user_details", {}, {"user_id": "ann_lee_1"}))
    other = Trace("hi").call("find_user_id_by_email", {"email": "a"}, "ann_lee_1")
    other.call("cancel_pending_order", {"order_id": "#W0000003"}, {"user_id": "bob_ray_2"})
    assert not _check(checks.one_user, other)
    two = Trace("hi").call("find_user_id_by_email", {}, "ann_lee_1")
    assert not _check(checks.one_user, two.call("find_user_id_by_email", {}, "bob_ray_2"))


def test_ids_a_change_uses_must_have_been_shown() -> None:
    write = ("cancel_pending_order", {"order_id": "#W0000002", "reason": "x"}, ORDER_OUT)
    assert not _check(checks.known_ids, Trace("cancel my order").call(*write))
    assert _check(checks.known_ids, Trace("cancel #W0000002 please").call(*write))
    read = Trace("hi").call("get_user_details", {}, {"orders": ["#W0000002"]})
    assert _check(checks.known_ids, read.call(*write))
    near = Trace("hi").call("get_user_details", {}, {"orders": ["#W00000021"]})
    assert not _check(checks.known_ids, near.call(*write))  # a longer id does not show it


@pytest.mark.parametrize(
    ("value", "text", "found"),
    [
        ("1126.04", "a refund of $1,126.04", True),
        ("1126.04", "a refund of 1126.04", True),
        ("1126.04", "a refund of 1126.05", False),
        ("481.5", "it costs $481.50", True),
        ("camera", "the Camera is dearest", True),
        ("20 hours", "about 20 hours", True),
    ],
)
def test_communicated_values_are_found_as_tau2_finds_them(
    value: str, text: str, found: bool
) -> None:
    from groundstate.grading.constraints import normalise

    assert bool(re.search(info_pattern(value), normalise(text))) is found


# --- conversion ---------------------------------------------------------------------------


def test_import_writes_a_suite_that_validates(tau2_dir: Path, tmp_path: Path) -> None:
    into = tmp_path / "suite"
    # the tools are the same in every task: their robustness is proven once, below
    report = import_tau2(tau2_dir, into, ImportOptions(world="full", tool_robustness="off"))
    assert report.converted == ["retail-000", "retail-001", "retail-002", "retail-004"]
    assert "refund_everything" in report.unconverted["3"]
    assert (into / "LICENSE-tau2-bench").read_text() == "MIT License\n"
    assert (into / "tools.py").read_text() == Path(
        TOOLS["calculate"].fn.__code__.co_filename
    ).read_text()
    suite = load_suite(into)
    result = validate_suite(suite)
    failures = {t.task_id: [c.detail for c in t.failures] for t in result.tasks}
    assert all(not f for f in failures.values()), failures
    exchange = yaml.safe_load((into / "tasks" / "retail-000.yaml").read_text())
    assert exchange["outcome_assertions"][0]["state_diff"] == {
        "orders": {
            "changed": [
                {
                    "key": "#W0000001",
                    "set": {
                        "status": "exchange requested",
                        "exchange_items": '["1001"]',
                        "exchange_new_items": '["1002"]',
                        "exchange_payment_method_id": "credit_card_1",
                        "exchange_price_difference": 2.5,
                    },
                }
            ]
        }
    }
    assert exchange["user"]["knowledge"] == {
        "first_name": "Ann",
        "last_name": "Lee",
        "zip": "73301",
    }
    # the exchange made twice is a second call on the order, which the tool refuses and
    # changed-once-per-order fails: killed, not declared equivalent (nineteenth round)
    declared = exchange.get("equivalent_mutants") or []
    assert not [m for m in declared if m["mutant"].startswith("repeat:")], declared
    [validity] = [t for t in result.tasks if t.task_id == "retail-000"]
    assert validity.mutation is not None
    assert not [s.id for s in validity.mutation.survivors if s.id.startswith("repeat:")]


def test_a_write_only_gold_list_is_completed_with_the_reads_the_policy_needs(
    tau2_dir: Path, tmp_path: Path
) -> None:
    report = import_tau2(tau2_dir, tmp_path / "suite", ImportOptions(tasks=["1"]))
    added = [n for note in report.notes for n in note.notes]
    assert added == [
        "added find_user_id_by_name_zip(first_name='Ann', last_name='Lee', zip='73301')",
        "added get_order_details(order_id='#W0000002')",
    ]
    oracle = yaml.safe_load(
        (tmp_path / "suite" / "solutions" / "retail-001" / "oracle.yaml").read_text()
    )
    kinds = [next(iter(step)) for step in oracle["steps"]]
    assert kinds == ["say", "call", "call", "say", "call", "finish"]
    assert (
        "#W0000002" in oracle["steps"][3]["say"] and "no longer needed" in oracle["steps"][3]["say"]
    )


def test_a_no_change_task_has_a_harmful_known_bad_and_requires_what_to_say(
    tau2_dir: Path, tmp_path: Path
) -> None:
    import_tau2(tau2_dir, tmp_path / "suite", ImportOptions(tasks=["2"], mutation_testing="off"))
    task = yaml.safe_load((tmp_path / "suite" / "tasks" / "retail-002.yaml").read_text())
    assert task["expect_no_change"] is True
    assert task["hard_process_constraints"][0]["at_least"]["match"]["matches"] == info_pattern(
        "30.0"
    )
    bad = tmp_path / "suite" / "solutions" / "retail-002" / "bad_needless_transfer.yaml"
    assert yaml.safe_load(bad.read_text())["fails_by"] == "outcome"


def test_the_task_world_keeps_the_tasks_users_and_look_alikes(
    tau2_dir: Path, tmp_path: Path
) -> None:
    import_tau2(tau2_dir, tmp_path / "suite", ImportOptions(tasks=["0"]))
    fixture = json.loads((tmp_path / "suite" / "fixtures" / "retail-000.json").read_text())
    users = [u["user_id"] for u in fixture["rows"]["users"]]
    assert users == ["ann_lee_1", "bob_ray_2"]  # Bob shares Ann's zip code
    assert {v["product_id"] for v in fixture["rows"]["variants"]} == {"100"}  # no lamp asked
    assert len(fixture["rows"]["products"]) == 2


def test_a_folder_that_is_not_tau2_data_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"db\.json: missing"):
        import_tau2(tmp_path, tmp_path / "suite")
    result = CliRunner().invoke(main, ["import-tau2", str(tmp_path), "--into", str(tmp_path / "s")])
    assert result.exit_code == 2 and "db.json: missing" in result.output


def test_an_unknown_task_id_is_one_clear_error(tau2_dir: Path, tmp_path: Path) -> None:
    args = ["import-tau2", str(tau2_dir), "--into", str(tmp_path / "s"), "--task", "99"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2 and "no τ² task 99" in result.output


def test_import_refuses_to_write_into_a_folder_that_is_not_a_suite(
    tau2_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    with pytest.raises(SpecError, match="not a suite"):
        import_tau2(tau2_dir, tmp_path / "notes")


def test_cli_imports_and_audits(tau2_dir: Path, tmp_path: Path) -> None:
    into = tmp_path / "suite"
    args = ["import-tau2", str(tau2_dir), "--into", str(into), "--task", "2", "--task", "4"]
    switches = ["--mutation-testing", "off", "--tool-robustness", "off"]
    result = CliRunner().invoke(main, [*args, "--audit", *switches, "--json"])
    assert result.exit_code == 0, result.output
    audit = json.loads(result.output)["audit"]
    assert audit["proven"] == ["retail-002", "retail-004"]
    # nothing changes in 2, but it requires a price: neither straw agent passes
    assert audit["do_nothing_passes"] == [] and audit["claims_only_passes"] == []
    assert audit["completed"] == []


def test_no_schema_valid_call_crashes_a_tool(tau2_dir: Path, tmp_path: Path) -> None:
    options = ImportOptions(tasks=["0"], mutation_testing="off")
    import_tau2(tau2_dir, tmp_path / "suite", options)
    suite = load_suite(tmp_path / "suite")
    (task,) = suite.tasks.values()
    passed, detail = check_tool_robustness(Proof(suite, task))  # validation's check alone
    assert passed and "off" not in detail, detail

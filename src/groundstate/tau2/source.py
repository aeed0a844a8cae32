"""The τ²-bench retail files an import reads, as typed models.

Only the fields the importer uses are modelled; τ² adds fields over time, so unknown ones are
ignored rather than refused. A missing file or a field of the wrong shape is a
:class:`~groundstate.errors.SpecError` naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from groundstate.errors import SpecError
from groundstate.paths import in_the_way, os_reason
from groundstate.spec.files import parse_json

FILES = ("db.json", "tasks.json", "policy.md")
"""The files an import needs; ``tools_interface.json`` and ``split_tasks.json`` are optional."""


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Action(_Loose):
    """One gold action: a tool call of the reference trajectory."""

    action_id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    compare_args: list[str] | None = None
    """The arguments τ² compares when it checks the action (``None``: all of them)."""


class EvaluationCriteria(_Loose):
    actions: list[Action] = Field(default_factory=list)
    communicate_info: list[str] | None = None
    """Strings τ² requires in some agent message."""
    nl_assertions: list[str] | None = None
    """Statements τ² grades with a language-model judge."""
    reward_basis: list[str] = Field(default_factory=list)
    env_assertions: list[Any] | None = None
    """Checks τ² runs on the final environment (``ENV_ASSERTION``); retail has none."""


class Instructions(_Loose):
    task_instructions: str | None = None
    reason_for_call: str
    """Required, as in τ²'s own model: it becomes the user's opening message."""
    known_info: str | None = None
    unknown_info: str | None = None


class UserScenario(_Loose):
    instructions: Instructions

    @field_validator("instructions", mode="before")
    @classmethod
    def _free_text(cls, value: Any) -> Any:
        """τ²'s model also takes the instructions as one free text (no separate reason for
        the call): that text is then the user's reason for calling."""
        return {"reason_for_call": value} if isinstance(value, str) else value


class Issue(_Loose):
    """A problem τ²'s maintainers recorded against a task."""

    title: str
    status: str = ""


class Tau2Task(_Loose):
    id: str
    user_scenario: UserScenario
    evaluation_criteria: EvaluationCriteria
    issues: list[Issue] = Field(default_factory=list)
    initial_state: dict[str, Any] | None = None
    """What τ² does to the database before the conversation (retail: nothing)."""


# --- db.json: the records the importer reads (τ² keeps more; extra fields are kept) -------


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Name(_Record):
    first_name: str
    last_name: str


class _Address(_Record):
    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class _PaymentMethod(_Record):
    id: str
    source: Literal["credit_card", "gift_card", "paypal"]
    brand: str | None = None
    last_four: str | None = None
    balance: float | None = None


class _User(_Record):
    user_id: str
    name: _Name
    address: _Address
    email: str
    payment_methods: dict[str, _PaymentMethod]
    orders: list[str] = Field(default_factory=list)


class _Variant(_Record):
    item_id: str
    options: dict[str, Any]
    available: bool
    price: float


class _Product(_Record):
    product_id: str
    name: str
    variants: dict[str, _Variant]


class _Item(_Record):
    item_id: str
    product_id: str
    name: str
    price: float
    options: dict[str, Any]


class _Fulfillment(_Record):
    tracking_id: list[str]
    item_ids: list[str]


class _Payment(_Record):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class _Order(_Record):
    order_id: str
    user_id: str
    address: _Address
    items: list[_Item]
    status: str
    fulfillments: list[_Fulfillment]
    payment_history: list[_Payment]


class _Db(_Record):
    users: dict[str, _User]
    orders: dict[str, _Order]
    products: dict[str, _Product]


_SPLITS = TypeAdapter(dict[str, list[str]])


class _Parameter(_Loose):
    name: str


class InterfaceTool(_Loose):
    """One tool of τ²'s ``tools_interface.json``: its name and its parameters' names."""

    name: str
    parameters: list[_Parameter]


_INTERFACE = TypeAdapter(list[InterfaceTool])

_KEYED_BY = (
    ("users", "user_id"),
    ("orders", "order_id"),
    ("products", "product_id"),
)
"""Each table of records and the field its keys repeat: τ²'s tools find a record by its key."""


@dataclass(frozen=True)
class Source:
    """A τ² retail data folder, read."""

    root: Path
    db: dict[str, Any]
    tasks: list[Tau2Task]
    policy: str
    splits: dict[str, list[str]]
    interface: dict[str, list[str]] | None = None
    """Tool name -> parameter names, from ``tools_interface.json`` (None: the file is absent)."""


def load_source(root: Path) -> Source:
    """Read a τ² retail data folder (``db.json``, ``tasks.json``, ``policy.md``...)."""
    root = Path(root)
    if (way := in_the_way(root)) is not None:
        raise SpecError(root, None, f"{way}: give the τ²-bench retail data folder")
    for name in FILES:
        if not (root / name).is_file():
            raise SpecError(root / name, None, "missing: not a τ²-bench retail data folder")
    db = _db(root / "db.json", _json(root / "db.json"))
    raw_tasks = _json(root / "tasks.json")
    if not isinstance(raw_tasks, list):
        raise SpecError(root / "tasks.json", None, "expected a list of tasks")
    tasks = [_task(root / "tasks.json", i, raw) for i, raw in enumerate(raw_tasks)]
    _unique_ids(root / "tasks.json", tasks)
    splits_file = root / "split_tasks.json"
    interface_file = root / "tools_interface.json"
    return Source(
        root=root,
        db=db,
        tasks=tasks,
        policy=_text(root / "policy.md"),
        splits=_splits(splits_file, _json(splits_file)) if splits_file.is_file() else {},
        interface=(
            _interface(interface_file, _json(interface_file)) if interface_file.is_file() else None
        ),
    )


def _interface(path: Path, raw: Any) -> dict[str, list[str]]:
    try:
        tools = _INTERFACE.validate_python(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        raise SpecError(path, where.lstrip(".") or None, error["msg"]) from exc
    return {tool.name: [p.name for p in tool.parameters] for tool in tools}


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(path, None, f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise SpecError(path, None, f"cannot read: {os_reason(path, exc)}") from exc


def _splits(path: Path, raw: Any) -> dict[str, list[str]]:
    """Split name -> τ² task ids. A list given as one text (``"0,1"``) would match ids by
    substring (``"1"`` in ``"10,11"``), and numbers would match none: both are refused."""
    try:
        return _SPLITS.validate_python(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise SpecError(path, where or None, error["msg"]) from exc


def _db(path: Path, raw: Any) -> dict[str, Any]:
    """τ²'s database, its records checked (numbers given as text read as τ²'s own models
    read them) and returned as plain data."""
    try:
        db = _Db.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise SpecError(path, where or None, error["msg"]) from exc
    for table, field in _KEYED_BY:
        for key, record in getattr(db, table).items():
            if getattr(record, field) != key:
                raise SpecError(
                    path,
                    f"{table}.{key}.{field}",
                    f"differs from its key: {getattr(record, field)!r}",
                )
    for product in db.products.values():
        for key, variant in product.variants.items():
            if variant.item_id != key:
                where = f"products.{product.product_id}.variants.{key}.item_id"
                raise SpecError(path, where, f"differs from its key: {variant.item_id!r}")
    dumped: dict[str, Any] = db.model_dump(mode="json")
    return dumped


def _unique_ids(path: Path, tasks: list[Tau2Task]) -> None:
    first: dict[str, int] = {}
    for index, task in enumerate(tasks):
        if task.id in first:
            raise SpecError(
                path,
                f"[{index}].id",
                f"τ² task {task.id!r} appears twice (also [{first[task.id]}])",
            )
        first[task.id] = index


def _json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(path, None, f"not readable JSON: {exc}") from exc
    return parse_json(path, text)


def _task(path: Path, index: int, raw: Any) -> Tau2Task:
    try:
        return Tau2Task.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise SpecError(path, f"[{index}].{where}", error["msg"]) from exc

"""``import_tau2``: write a groundstate suite from τ²-bench's retail data folder.

The suite it writes::

    SUITE/
      suite.yaml            name, description, policy, the ``policy`` constraint set, switches
      policy.md             τ²'s policy, verbatim
      tools.py              groundstate/tau2/retail_tools.py, verbatim
      checks.py             groundstate/tau2/retail_checks.py, verbatim
      LICENSE-tau2-bench    τ²-bench's MIT licence, when the data folder has it
      fixtures/<task>.json  each task's world (see groundstate.tau2.world)
      tasks/<task>.yaml     one task per τ² task
      solutions/<task>/     oracle.yaml (the gold actions), bad_*.yaml where needed
"""

from __future__ import annotations

import random
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from groundstate.errors import SpecError
from groundstate.paths import make_folder
from groundstate.rounding import counted
from groundstate.spec.files import YamlDumper
from groundstate.tau2 import retail_checks, retail_tools
from groundstate.tau2.convert import (
    Converted,
    Unconvertible,
    convert_task,
    task_id_of,
    unconvertible_because,
)
from groundstate.tau2.policy import constraint_sets
from groundstate.tau2.source import Source, Tau2Task, load_source
from groundstate.tau2.world import World
from groundstate.tools import load_tools

Switch = Literal["required", "report", "off"]


class ImportOptions(BaseModel):
    """What to convert and how the suite's validation switches are set."""

    world: World = "task"
    """``task``: each fixture holds the catalogue and the task's users and look-alikes;
    ``full``: every fixture holds τ²'s whole database (slow to validate)."""
    tasks: list[str] = Field(default_factory=list)
    """τ² task ids to convert (empty: all)."""
    sample: int | None = Field(default=None, ge=1)
    """Convert a seeded random sample of this many tasks (after ``tasks``)."""
    seed: int = 0
    mutation_testing: Switch = "report"
    """The suite's ``mutation_testing``: ``report`` lists surviving mutants without failing
    (an audit wants them listed); ``off`` makes validation several times faster."""
    tool_robustness: Switch = "required"


class TaskNote(BaseModel):
    tau2_id: str
    task_id: str | None
    """The groundstate task id; ``None`` when the task could not be converted."""
    notes: list[str] = Field(default_factory=list)


class ImportReport(BaseModel):
    """What an import wrote, and what it could not convert."""

    suite: str
    source_tasks: int
    """Tasks in τ²'s ``tasks.json``."""
    converted: list[str] = Field(default_factory=list)
    unconverted: dict[str, str] = Field(default_factory=dict)
    """τ² task id -> why it could not be converted."""
    notes: list[TaskNote] = Field(default_factory=list)


def import_tau2(data_dir: Path, into: Path, options: ImportOptions | None = None) -> ImportReport:
    """Convert the τ² retail folder *data_dir* into a groundstate suite at *into*."""
    options = options or ImportOptions()
    source = load_source(Path(data_dir))
    into = Path(into)
    _refuse_to_overwrite(into)
    # Written aside and moved in whole: an import that fails leaves *into* as it was (no
    # half-written folder that the next import, after the data is fixed, refuses).
    with tempfile.TemporaryDirectory(prefix="groundstate-tau2-") as staging:
        report = _convert(source, Path(staging), options, Path(data_dir))
        _install(Path(staging), into)
    report.suite = str(into)
    return report


def _convert(source: Source, into: Path, options: ImportOptions, data_dir: Path) -> ImportReport:
    for name in _GENERATED:
        (into / name).mkdir()
    _write_shared_files(source, into, options)
    tools = load_tools(into / "tools.py")
    _same_interface(source, tools)
    report = ImportReport(suite=str(into), source_tasks=len(source.tasks))
    selected = _selected(source.tasks, options)
    refused = _clashes(selected)
    for task in selected:
        reason = refused.get(task.id) or unconvertible_because(task)
        if reason is None:
            _import_one(source, task, into, tools, options, report)
        else:  # before any file is named after the task
            _unconverted(report, task, reason)
    if not report.converted:
        why = "; ".join(f"τ² task {tid!r}: {reason}" for tid, reason in report.unconverted.items())
        why = why or "it lists none"
        raise SpecError(data_dir, "tasks.json", f"no task could be converted ({why})")
    _write_yaml(into / "suite.yaml", _suite_config(source, options, report))
    return report


_GENERATED = ("tasks", "solutions", "fixtures")
"""The folders an import writes whole: a new import replaces them."""


def _same_interface(source: Source, tools: dict[str, Any]) -> None:
    """The suite's tools implement τ²'s retail interface as the importer knows it; data whose
    ``tools_interface.json`` says otherwise (a tool gone, renamed or with other parameters)
    would be converted into tasks offering tools its domain lacks: refused, naming the first
    difference."""
    if source.interface is None:
        return
    path = source.root / "tools_interface.json"
    for name, tool in sorted(tools.items()):
        if name not in source.interface:
            lacks = "the converted tasks would offer a tool the domain lacks"
            raise SpecError(path, None, f"has no tool {name!r}: {lacks}")
        ours = sorted(tool.parameters.get("properties", {}))
        theirs = sorted(source.interface[name])
        if ours != theirs:
            raise SpecError(
                path,
                name,
                f"takes ({', '.join(theirs)}), the importer's tool takes ({', '.join(ours)})",
            )


def _refuse_to_overwrite(into: Path) -> None:
    if into.exists() and not into.is_dir():
        raise SpecError(into, None, "exists and is not a folder: refusing to write into it")
    if into.exists() and any(into.iterdir()) and not (into / "suite.yaml").is_file():
        raise SpecError(into, None, "exists and is not a suite: refusing to write into it")


def _install(staged: Path, into: Path) -> None:
    """Put the converted suite in *into*: its generated folders replace the old ones, its
    files the old files; other files of an earlier import's folder are kept."""
    make_folder(into)
    for name in _GENERATED:
        shutil.rmtree(into / name, ignore_errors=True)
    for entry in staged.iterdir():
        target = into / entry.name
        if target.is_file() or target.is_symlink():
            target.unlink()
        shutil.move(str(entry), str(target))


def _write_shared_files(source: Source, into: Path, options: ImportOptions) -> None:
    (into / "policy.md").write_text(source.policy, encoding="utf-8")
    shutil.copyfile(_module_file(retail_tools), into / "tools.py")
    shutil.copyfile(_module_file(retail_checks), into / "checks.py")
    for licence in (source.root / "LICENSE", source.root.parent / "LICENSE"):
        if licence.is_file():
            shutil.copyfile(licence, into / "LICENSE-tau2-bench")
            break


def _module_file(module: Any) -> Path:
    return Path(module.__file__)


def _selected(tasks: list[Tau2Task], options: ImportOptions) -> list[Tau2Task]:
    chosen = [t for t in tasks if not options.tasks or t.id in options.tasks]
    unknown = sorted(set(options.tasks) - {t.id for t in tasks})
    if unknown:
        raise SpecError("tasks.json", "id", f"no τ² task {', '.join(unknown)}")
    if options.sample is not None and options.sample < len(chosen):
        picked = set(random.Random(options.seed).sample(range(len(chosen)), options.sample))
        chosen = [t for i, t in enumerate(chosen) if i in picked]
    return chosen


def _import_one(
    source: Source,
    task: Tau2Task,
    into: Path,
    tools: dict[str, Any],
    options: ImportOptions,
    report: ImportReport,
) -> None:
    task_id = task_id_of(task)
    fixture = into / "fixtures" / f"{task_id}.json"
    try:
        converted = convert_task(
            source.db,
            task,
            tools,
            fixture_path=fixture,
            world=options.world,
            splits=source.splits,
        )
    except Unconvertible as exc:
        fixture.unlink(missing_ok=True)
        _unconverted(report, task, str(exc))
        return
    converted.task["available_tools"] = sorted(tools)
    _write_task(into, converted)
    report.converted.append(task_id)
    if converted.notes:
        report.notes.append(TaskNote(tau2_id=task.id, task_id=task_id, notes=converted.notes))


def _clashes(tasks: list[Tau2Task]) -> dict[str, str]:
    """τ² id -> why it is not converted: its task id (and file names) are an earlier task's,
    as ``7`` and ``007`` both give ``retail-007``; case counts as no difference, since the
    suite may be copied to a file system that ignores it."""
    first: dict[str, str] = {}
    clashes = {}
    for task in tasks:
        key = task_id_of(task).casefold()
        if key in first:
            clashes[task.id] = f"its task id {task_id_of(task)} is τ² task {first[key]!r}'s too"
        else:
            first[key] = task.id
    return clashes


def _unconverted(report: ImportReport, task: Tau2Task, reason: str) -> None:
    report.unconverted[task.id] = reason
    report.notes.append(TaskNote(tau2_id=task.id, task_id=None, notes=[reason]))


def _write_task(into: Path, converted: Converted) -> None:
    header = "".join(
        f"# {_visible(part)}\n" for line in converted.header for part in line.splitlines() or [""]
    )
    body = _dumped(converted.task)
    (into / "tasks" / f"{converted.task_id}.yaml").write_text(header + body, encoding="utf-8")
    folder = into / "solutions" / converted.task_id
    make_folder(folder)
    for name, solution in converted.solutions.items():
        _write_yaml(folder / f"{name}.yaml", solution)


def _visible(text: str) -> str:
    """*text* for a YAML comment: control and format characters escaped (``\\x07``). YAML
    allows none of the former anywhere, so one in τ²'s scenario made the task file unreadable;
    the latter (bidi overrides) would reorder what a reader sees."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


def _write_yaml(path: Path, data: Any) -> None:
    path.write_text(_dumped(data), encoding="utf-8")


def _dumped(data: Any) -> str:
    """YAML that reads back as *data*. PyYAML writes a few characters as they are (NEL, the
    line and paragraph separators) that its reader then takes for line breaks: a request
    holding one would change; such data is written with every non-ASCII character escaped.
    A text all ASCII is what that escaped form would be (only characters it writes as they are
    differ): it is not read back, which cost as much as the dump."""
    text = yaml.dump(data, Dumper=YamlDumper, sort_keys=False, allow_unicode=True, width=100)
    if not text.isascii() and yaml.safe_load(text) != data:
        text = yaml.dump(data, Dumper=YamlDumper, sort_keys=False, allow_unicode=False, width=100)
    return text


def _population(options: ImportOptions, report: ImportReport) -> dict[str, str]:
    """The tasks' population and how they were chosen, which the importer knows (the decision
    the numbers serve it does not: ``check`` asks for it)."""
    total, converted = report.source_tasks, len(report.converted)
    if options.tasks:
        chosen = f"the {counted(converted, 'task')} chosen by --task"
    elif options.sample is not None:
        chosen = f"a seeded random sample (--sample {options.sample} --seed {options.seed})"
    else:
        chosen = "every task"
    return {
        "description": (
            "Customer-service chats in τ²-bench's retail domain: one user asks to cancel, "
            "modify, return or exchange their own orders or to change an address, under the "
            "written policy, including requests the policy refuses."
        ),
        "sampling": (
            f"{chosen} of the {total} in τ²-bench's retail tasks.json ({converted} converted); "
            "tasks written by the benchmark's authors, not drawn at random from real chats."
        ),
    }


def _suite_config(source: Source, options: ImportOptions, report: ImportReport) -> dict[str, Any]:
    canary = report.converted[0]
    return {
        "name": "tau2-retail",
        "description": (
            "τ²-bench's retail domain (sierra-research/tau2-bench, MIT; see "
            "LICENSE-tau2-bench), converted by `groundstate import-tau2` from "
            f"{source.root}. Tools are groundstate's own implementation of τ²'s documented "
            "interface; each task's expected state is its gold actions replayed with them; "
            f"fixtures hold the {options.world} world."
        ),
        "population": _population(options, report),
        "environment": "sqlite",
        "policy": "policy.md",
        "tools": "tools.py",
        "canary": canary,
        "mutation_testing": options.mutation_testing,
        "tool_robustness": options.tool_robustness,
        "constraint_sets": constraint_sets(),
    }

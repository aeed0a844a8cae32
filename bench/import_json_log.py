"""Import of a large JSON document: an Inspect ``.json`` log, a τ² results file, Terminal-Bench
results, an AppWorld evaluation, SWE-bench instances' reports or a Harbor trial's result, its
rollout every model call's token ids (prints figures; not a test,
though ``tests/test_imports2_round21.py`` and later rounds' tests run it small).

Writes a document of about ``--megabytes`` MB (samples, simulations or trials of about 500 KB each,
their transcripts a hundred messages of 5 KB), imports it with the command line in a child
process, and prints, as one JSON line, the child's peak resident memory before the import
began and at its end (KiB), the import's exit code and seconds, and the file's size. Read whole
(before the twenty-first round's second pass), a 200 MB log took more than 500 MB over the
child's start; read record by record, a few MB.

Run: ``.venv/bin/python bench/import_json_log.py [--megabytes 800] [--format tau2-bench]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MESSAGE = "x" * 5000
RECORD_MESSAGES = 100
CHILD = """
import json, resource, sys
from groundstate.cli import main
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
with open(sys.argv[1], "w") as out:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    json.dump({"before_kib": before, "peak_kib": peak, "exit": code}, out)
"""


def _sample(index: int) -> dict[str, Any]:
    messages = [{"role": "user", "content": MESSAGE} for _ in range(RECORD_MESSAGES)]
    return {
        "id": f"s{index}", "epoch": 1, "input": "q", "target": "a", "messages": messages,
        "scores": {"match": {"value": "C" if index % 3 else "I"}}, "metadata": {},
        "events": [], "model_usage": {}, "total_time": 1.5, "working_time": 1.0,
        "error": None, "error_retries": [], "limit": None,
    }  # fmt: skip


def _simulation(index: int) -> dict[str, Any]:
    messages = [{"role": "user", "content": MESSAGE} for _ in range(RECORD_MESSAGES)]
    reward = 1.0 if index % 3 else 0.0
    return {
        "id": f"sim-{index}", "task_id": str(index), "trial": 0, "messages": messages,
        "termination_reason": "user_stop", "reward_info": {"reward": reward},
        "agent_cost": 0.01, "duration": 3.0,
    }  # fmt: skip


def _trial(index: int) -> dict[str, Any]:
    """A Terminal-Bench trial, its instruction as long as a record's transcript."""
    return {
        "id": f"t{index}", "trial_name": f"task{index}.1-of-1.run", "task_id": f"task{index}",
        "instruction": MESSAGE * RECORD_MESSAGES, "is_resolved": index % 3 != 0,
        "failure_mode": "unset", "parser_results": None, "total_input_tokens": 10,
        "total_output_tokens": 5,
    }  # fmt: skip


def _task(index: int) -> dict[str, Any]:
    """An AppWorld task's report, its tests' text (not what the import stores: a failed test's
    requirement is kept in the attempt's origin) as long as a record's transcript."""
    long = MESSAGE * RECORD_MESSAGES
    test = {"requirement": long, "label": "no_op_fail"}
    failed = index % 3 == 0
    return {"success": not failed, "difficulty": 1, "num_tests": 2,
            "passes": [test] if failed else [test, test],
            "failures": [{"requirement": "r", "trace": long, "label": "no_op_fail"}]
            if failed else []}  # fmt: skip


def _instance(index: int) -> dict[str, Any]:
    """A SWE-bench instance's ``report.json`` entry, its tests' names (``tests_status``, not
    what the import stores) as long as a record's transcript."""
    names = [f"tests/test_{index}.py::test_{n}_" + MESSAGE for n in range(RECORD_MESSAGES)]
    status = {"FAIL_TO_PASS": {"success": names[:1], "failure": []},
              "PASS_TO_PASS": {"success": names[1:], "failure": []},
              "FAIL_TO_FAIL": {"success": [], "failure": []},
              "PASS_TO_FAIL": {"success": [], "failure": []}}  # fmt: skip
    return {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True,
            "resolved": index % 3 != 0, "tests_status": status}  # fmt: skip


def _call(index: int) -> list[int]:
    """One model call's prompt token ids in a Harbor trial's rollout (``RolloutDetail``)."""
    return list(range(100_000 + index, 100_000 + index + 60_000))


RECORDS = {
    "inspect": _sample, "tau2-bench": _simulation, "terminal-bench": _trial, "appworld": _task,
    "swe-bench": _instance, "harbor": _call,
}  # fmt: skip


def write_document(path: Path, megabytes: int, kind: str, one_line: bool = False) -> int:
    """A document of about *megabytes* MB, written record by record (a record a line, or all on
    one line); returns the records."""
    record = RECORDS[kind]
    size = len(json.dumps(record(0)))
    count = max(1, round(megabytes * 1_000_000 / size))
    head: dict[str, Any]
    tail: dict[str, Any] = {}
    if kind == "inspect":
        spec = {"task": "bench", "model": "m", "eval_id": "e", "created": "2026-01-01T00:00:00"}
        head = {"version": 2, "status": "success", "eval": spec, "plan": {}, "results": None}
        key = "samples"
    elif kind == "tau2-bench":
        head = {"timestamp": "2026-01-01T00:00:00", "info": {"num_trials": 1}, "tasks": []}
        key = "simulations"
    elif kind == "appworld":  # its tasks are an object's members, not a list's elements
        return _write_appworld(path, count, "" if one_line else "\n")
    elif kind == "swe-bench":  # instances' reports: an object's members, by instance id
        return _write_reports(path, count, "" if one_line else "\n")
    elif kind == "harbor":  # one trial, its rollout every call's token ids
        return _write_trial(path, count, "" if one_line else "\n")
    else:  # the figures tb run computes from its trials come after them
        head, key = {"id": "run"}, "results"
        resolved = [f"task{i}" for i in range(count) if i % 3 != 0]
        unresolved = [f"task{i}" for i in range(count) if i % 3 == 0]
        tail = {"n_resolved": len(resolved), "n_unresolved": len(unresolved),
                "resolved_ids": resolved, "unresolved_ids": unresolved}  # fmt: skip
    brk = "" if one_line else "\n"
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head)[:-1] + f', "{key}": [{brk}')
        for index in range(count):
            out.write(("" if index == 0 else f",{brk}") + json.dumps(record(index)))
        out.write(f"{brk}]" + (", " + json.dumps(tail)[1:] if tail else "}") + "\n")
    return count


def _write_appworld(path: Path, count: int, brk: str) -> int:
    """An AppWorld evaluation of *count* tasks, two of each scenario."""
    with path.open("w", encoding="utf-8") as out:
        out.write('{"aggregate": {}, "individual": {' + brk)
        for index in range(count):
            name = f"s{index // 2}_{index % 2 + 1}"
            out.write(("" if index == 0 else f",{brk}") + f'"{name}": ' + json.dumps(_task(index)))
        out.write(f"{brk}}}}}\n")
    return count


def _write_reports(path: Path, count: int, brk: str) -> int:
    """*count* SWE-bench instances' reports in one object (``{instance_id: report}``)."""
    with path.open("w", encoding="utf-8") as out:
        out.write("{" + brk)
        for index in range(count):
            entry = f'"repo__repo-{index}": ' + json.dumps(_instance(index))
            out.write(("" if index == 0 else f",{brk}") + entry)
        out.write(f"{brk}}}\n")
    return count


def _write_trial(path: Path, count: int, brk: str) -> int:
    """A Harbor trial's ``result.json`` whose rollout holds *count* model calls' token ids."""
    at = {"started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:10:00Z"}
    head = {"id": "00000000-0000-4000-8000-000000000001", "task_name": "bench",
            "trial_name": "bench__1", "task_id": {"path": "tasks/bench"}, "source": "bench",
            "task_checksum": "c", "config": {}, "agent_info": {"name": "a", "version": "1",
            "model_info": {"name": "m", "provider": "p"}}}  # fmt: skip
    tail = {"verifier_result": {"rewards": {"reward": 1.0}}, "exception_info": None, **at,
            "agent_execution": at}  # fmt: skip
    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(head)[:-1] + ', "agent_result": {"n_input_tokens": 10, '
                  '"n_output_tokens": 5, "cost_usd": 0.1, "rollout_details": '
                  f'[{{"prompt_token_ids": [{brk}')  # fmt: skip
        for index in range(count):
            out.write(("" if index == 0 else f",{brk}") + json.dumps(_call(index)))
        out.write(f'{brk}], "completion_token_ids": [], "logprobs": []}}], "metadata": {{}}}}, '
                  + json.dumps(tail)[1:] + "\n")  # fmt: skip
    return count


def measure(path: Path, store: Path) -> dict[str, Any]:
    """Import *path* in a child process; its memory and exit code (see the module's doc)."""
    report = store.with_suffix(".measure.json")
    command = ["import-results", str(path), "--name", "big", "--store", str(store)]
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", CHILD, str(report), *command],  # its format detected
        check=False,
        capture_output=True,
    )
    figures: dict[str, Any] = json.loads(report.read_text())
    figures["seconds"] = round(time.perf_counter() - started, 1)
    figures["file_bytes"] = path.stat().st_size
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=800)
    parser.add_argument("--format", choices=sorted(RECORDS), default="inspect")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (a temp dir)")
    parser.add_argument("--one-line", action="store_true", help="the document on one line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / "document.json"
        records = write_document(path, args.megabytes, args.format, args.one_line)
        figures = measure(path, Path(folder) / "store.db")
    print(json.dumps({"format": args.format, "records": records, **figures}))


if __name__ == "__main__":
    main()

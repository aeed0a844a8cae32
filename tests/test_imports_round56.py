"""Fifty-sixth round: imports.

Classes of defect fixed:

- **An Inspect epoch written as a float was read one way in a sample and another in an
  early stop.** A sample's ``epoch`` of ``2.0`` was epoch 2 (as Inspect's own pydantic
  ``int`` reads it), but an early stop's ``{"id": "b", "epoch": 2.0}`` named no sample: the
  stop was not subtracted from the plan, so its attempt was named as lost from the log, and
  a stop of ``1.0`` beside the sample's own record of epoch 1 (a log that contradicts
  itself, refused when written ``1``) passed. Every epoch is read alike now: a whole number
  written as a float is that epoch, and one that is not whole (``1.5``, in a sample, a
  summary or an early stop) is refused naming the file, the place, the field and the
  sample's id.
- **An Inspect header figure was recomputed from the scores as verdicts, not as Inspect's
  metrics read them.** A scorer beside the deciding one whose values are no verdict (a
  ``steps`` score of 3, a text ``"maybe"`` that Inspect reads as 0) lost those samples from
  the recomputation: the honest ``mean`` Inspect computed was named as changed after the
  run, and a figure computed from the other samples only passed. The figures are recomputed
  from the values as Inspect's ``value_to_float`` reads them now (any number, text of no
  verdict as 0), and a scorer with a value it reads as no number (a dict beside numbers) is
  not recomputed.
- **The figures of a dict-valued score were passed over in silence.** Inspect logs a dict
  score's metrics key by key (an entry named ``acc`` of the scorer ``judge``); the check
  looked for a scorer named ``acc`` and found none, so a header's ``acc`` mean edited from
  0.5 to 0.9 said nothing while the plain scorers' figures are checked. Each key's figures
  are recomputed from the samples' values under that key now (named ``judge.acc``, as
  ``--scorer`` names it), with the entry's reducer.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from groundstate.errors import SpecError
from groundstate.importers import ImportOptions, open_source
from tests.test_imports_formats import EVAL, PLAN, Store, log, sample, write_eval, write_json


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _read(path: Path, scorer: str | None = None) -> tuple[dict[tuple[str, int], str], list[str]]:
    """Each attempt's (task, label) -> end, and the warnings, of the import of *path*."""
    source = open_source(path, ImportOptions(scorer=scorer))
    rows = {(row.task_id, row.label): row.terminal_reason for row in source.rows()}
    return rows, source.warnings()


# --- an epoch written as a float -----------------------------------------------------------


def _two_epochs(second: Any) -> list[dict[str, Any]]:
    return [sample("a", 1, {"m": {"value": "C"}}), sample("a", second, {"m": {"value": "I"}})]


@pytest.mark.parametrize("kind", ["json", "eval"])
def test_a_whole_epoch_written_as_a_float_is_that_epoch(tmp_path: Path, kind: str) -> None:
    held = _two_epochs(2.0)
    path = (
        write_json(tmp_path / "log.json", log(held))
        if kind == "json"
        else write_eval(tmp_path / "log.eval", held)
    )
    rows, _ = _read(path)
    assert rows == {("a", 1): "success", ("a", 2): "agent_failure/incorrect"}
    assert all(type(label) is int for _, label in rows)


@pytest.mark.parametrize("epoch", [1.5, 2.25, 0.5])
def test_an_epoch_that_is_not_whole_is_refused_naming_the_sample(
    store: Store, tmp_path: Path, epoch: float
) -> None:
    held = _two_epochs(epoch)
    err = store.refused(write_json(tmp_path / "log.json", log(held)))
    assert "log.json:samples[1]: epoch: must be an integer" in err
    assert f"got {epoch!r} (sample 'a')" in err
    err = store.refused(write_eval(tmp_path / "log.eval", held))
    assert f"log.eval!samples/a_epoch_{epoch}.json: epoch: must be an integer" in err
    assert "(sample 'a')" in err


def test_a_summary_epoch_that_is_not_whole_is_refused(store: Store, tmp_path: Path) -> None:
    path = write_eval(tmp_path / "log.eval", _two_epochs(2), finished=False)  # journal lists
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("_journal/summaries/1.json", json.dumps([{"id": "a", "epoch": 1.5}]))
    err = store.refused(path)
    assert "_journal/summaries/1.json[0]: epoch: must be an integer" in err and "'a'" in err


def test_the_old_epoch_refusals_keep_their_wording(store: Store, tmp_path: Path) -> None:
    for bad in ("one", None, True):
        err = store.refused(write_json(tmp_path / "log.json", log(_two_epochs(bad))))
        assert "samples[1]: epoch: must be an integer" in err


# --- an early stop's epoch --------------------------------------------------------------------

_PLANNED = {**EVAL, "config": {"epochs": 2}, "dataset": {"name": "d", "sample_ids": ["a", "b"]}}


def _stopped(tmp_path: Path, stop_epoch: Any, suffix: str = ".json") -> Path:
    """A log of a (epochs 1 and 2) and b (epoch 1), b's epoch 2 stopped early as written."""
    held = [*_two_epochs(2), sample("b", 1, {"m": {"value": "C"}})]
    stopping = {"manager": "m", "metadata": {},
                "early_stops": [{"id": "b", "epoch": stop_epoch, "reason": "plateau"}]}  # fmt: skip
    results = {"total_samples": 4, "completed_samples": 3, "scores": [],
               "early_stopping": stopping}  # fmt: skip
    data = {**log(held, spec=_PLANNED), "results": results}
    if suffix == ".json":
        return write_json(tmp_path / "log.json", data)
    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": _PLANNED,
                                                            "plan": PLAN}))  # fmt: skip
        for s in held:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        del data["samples"]
        archive.writestr("header.json", json.dumps(data))
    return path


@pytest.mark.parametrize("suffix", [".json", ".eval"])
@pytest.mark.parametrize("epoch", [2, 2.0])
def test_an_early_stop_of_a_whole_float_epoch_is_that_epoch(
    tmp_path: Path, suffix: str, epoch: Any
) -> None:
    rows, warnings = _read(_stopped(tmp_path, epoch, suffix))
    assert len(rows) == 3
    assert [w for w in warnings if "stopped early" in w]
    assert not [w for w in warnings if "plans" in w or "total_samples" in w]


@pytest.mark.parametrize("epoch", [1, 1.0])
def test_an_early_stop_of_a_sample_held_is_refused_however_its_epoch_is_written(
    store: Store, tmp_path: Path, epoch: Any
) -> None:
    err = store.refused(_stopped(tmp_path, epoch))
    assert "results.early_stopping.early_stops[0]: id: sample 'b' epoch 1" in err
    assert "contradicts itself" in err


def test_an_early_stop_of_an_epoch_that_is_not_whole_is_refused(
    store: Store, tmp_path: Path
) -> None:
    err = store.refused(_stopped(tmp_path, 1.5))
    assert "early_stops[0]: epoch: must be an integer" in err and "(sample 'b')" in err


@pytest.mark.parametrize("epoch", [None, "2"])
def test_an_early_stop_naming_no_epoch_still_names_none(tmp_path: Path, epoch: Any) -> None:
    """Control: a stop that names no epoch is left alone, as before (named in its warning,
    subtracted from nothing)."""
    rows, warnings = _read(_stopped(tmp_path, epoch))
    assert len(rows) == 3 and [w for w in warnings if "stopped early" in w]


# --- header figures recomputed as Inspect's metrics read the values --------------------------


def _entry(name: str, value: Any, metric: str = "mean", **fields: Any) -> dict[str, Any]:
    metrics = {metric: {"name": metric, "value": value, "params": {}}}
    return {"name": name, "scorer": name, "reducer": None, "params": {}, "metrics": metrics,
            **fields}  # fmt: skip


def _figures(tmp_path: Path, held: list[dict[str, Any]], *entries: dict[str, Any]) -> list[str]:
    """The warnings naming a header figure, of a log of *held* whose results give *entries*."""
    data = log(held)
    data["results"] = {"total_samples": len(held), "completed_samples": len(held),
                       "scores": list(entries)}  # fmt: skip
    path = write_json(tmp_path / f"f{len(list(tmp_path.iterdir()))}.json", data)
    _, warnings = _read(path, scorer="match")
    return [w for w in warnings if "results.scores of task" in w]


def _beside(*values: Any) -> list[dict[str, Any]]:
    """Samples decided by ``match``, each with a second scorer ``steps`` of *values*."""
    return [
        sample(f"s{i}", 1, {"match": {"value": "C" if i % 2 else "I"}, "steps": {"value": v}})
        for i, v in enumerate(values)
    ]


@pytest.mark.parametrize(
    ("values", "honest"),
    [
        ([3, 0.5], 1.75),  # a count beside the verdict
        ([12, 4, 8], 8.0),
        ([-1, 1], 0.0),
        (["maybe", "C"], 0.5),  # text of no verdict: Inspect reads 0
        (["5", 1], 3.0),  # a numeral in text, as Inspect reads it
        ([2, float("nan")], 2.0),  # an unscored sample left out
    ],
)
def test_a_figure_of_values_that_are_no_verdict_is_recomputed_as_inspect_reads_them(
    tmp_path: Path, values: list[Any], honest: float
) -> None:
    assert _figures(tmp_path, _beside(*values), _entry("steps", honest)) == []
    (line,) = _figures(tmp_path, _beside(*values), _entry("steps", honest + 0.25))
    assert f"give steps mean {honest + 0.25!r}" in line and "changed" in line


def test_a_score_of_values_read_as_no_number_is_not_recomputed(tmp_path: Path) -> None:
    """Control: a scorer giving a dict for one sample and a number for another is none
    Inspect computed one figure from: not recomputed, nothing said of it."""
    held = _beside({"a": 1}, 1)
    assert _figures(tmp_path, held, _entry("steps", 0.123)) == []
    assert _figures(tmp_path, held, {**_entry("a", 0.123), "scorer": "steps"}) == []


@pytest.mark.parametrize(
    "values", [[1e308, 1e308, 1e308], [float("inf"), 1], [float("-inf"), float("inf")],
               ["9" * 400, "9" * 400]],
)  # fmt: skip
def test_a_score_past_any_sum_is_not_recomputed(tmp_path: Path, values: list[Any]) -> None:
    """Huge values (no score, but a file may hold them): summed, they overflowed (a
    traceback, not a refusal or a warning); they are not recomputed."""
    assert _figures(tmp_path, _beside(*values), _entry("steps", 0.5)) == []


def _judged(*values: dict[str, Any], epochs: int = 1) -> list[dict[str, Any]]:
    return [
        sample(f"s{i}", e, {"match": {"value": "C"}, "judge": {"value": value}})
        for i, value in enumerate(values)
        for e in range(1, epochs + 1)
    ]


def _key(key: str, value: Any, **fields: Any) -> dict[str, Any]:
    """A header entry as Inspect logs a dict score's metric for one key."""
    return {**_entry(key, value), "scorer": "judge", **fields}


def test_a_dict_scores_figures_are_checked_key_by_key(tmp_path: Path) -> None:
    held = _judged({"acc": 1, "f1": 0.4}, {"acc": 0, "f1": 0.2})
    assert _figures(tmp_path, held, _key("acc", 0.5), _key("f1", 0.3)) == []
    (line,) = _figures(tmp_path, held, _key("acc", 0.9), _key("f1", 0.3))
    assert "give judge.acc mean 0.9, but the 2 samples held score 0.5" in line
    (line,) = _figures(tmp_path, held, _key("acc", 0.5), _key("f1", 0.7))
    assert "give judge.f1 mean 0.7" in line


def test_a_dict_scores_figures_are_reduced_key_by_key(tmp_path: Path) -> None:
    held = [
        sample("a", 1, {"match": {"value": "C"}, "judge": {"value": {"acc": 1, "f1": 0.2}}}),
        sample("a", 2, {"match": {"value": "C"}, "judge": {"value": {"acc": 0, "f1": 0.6}}}),
    ]
    assert _figures(tmp_path, held, _key("acc", 1.0, reducer="max"),
                    _key("f1", 0.6, reducer="max")) == []  # fmt: skip
    (line,) = _figures(tmp_path, held, _key("acc", 0.5, reducer="max"))
    assert "judge.acc mean 0.5" in line and "'max'" in line
    (line,) = _figures(tmp_path, held, _key("acc", 0.5, reducer="best_of"))
    assert "judge.acc mean 0.5 reduced by 'best_of'" in line and "not checked" in line


def test_a_key_no_sample_holds_or_of_no_number_says_nothing(tmp_path: Path) -> None:
    """Controls: an entry of a key the values lack, of a key holding a list, or naming a
    scorer no sample has, is no figure recomputed here."""
    held = _judged({"acc": 1, "notes": ["x"]}, {"acc": 0, "notes": ["y"]})
    entries = (_key("recall", 0.9), _key("notes", 0.9), {**_key("acc", 0.9), "scorer": "other"})
    assert _figures(tmp_path, held, *entries) == []


def test_a_scorer_named_as_its_entry_is_read_whole(tmp_path: Path) -> None:
    """Control: an entry whose ``scorer`` is its own name (every scorer but a dict one's)
    is checked as before; an entry with no ``scorer`` (older logs) too."""
    held = _beside(1, 0)
    (line,) = _figures(tmp_path, held, _entry("steps", 0.9))
    assert "give steps mean 0.9" in line
    old = {k: v for k, v in _entry("steps", 0.9).items() if k != "scorer"}
    assert len(_figures(tmp_path, held, old)) == 1
    assert _figures(tmp_path, held, _entry("steps", 0.5)) == []


def test_the_deciding_scores_figure_is_still_checked(tmp_path: Path) -> None:
    held = _beside(1, 1, 1)
    assert _figures(tmp_path, held, _entry("match", 1 / 3, "accuracy")) == []
    (line,) = _figures(tmp_path, held, _entry("match", 0.9, "accuracy"))
    assert "give match accuracy 0.9" in line


def test_refusals_are_spec_errors_in_process(tmp_path: Path) -> None:
    """The reader's refusal of a part epoch is a ``SpecError`` (one line, exit 2)."""
    path = write_json(tmp_path / "log.json", log(_two_epochs(1.5)))
    with pytest.raises(SpecError, match=r"epoch: must be an integer"):
        _read(path)

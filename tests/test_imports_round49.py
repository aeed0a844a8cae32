"""Forty-ninth round: imports.

A sample held in a finished Inspect archive that its ``summaries.json`` does not list (Inspect
lists there every sample it writes, so it was added to the archive after the run: a success
as easily as a failure) was imported without a word; a sample listed and not held was
already refused. It is named in a warning now.

Inspect samples that ended normally (no error, no limit) without the deciding score (a
scorer that returned ``None``; a ``--scorer`` some samples lack) were imported as
``grader_failure``, invalid attempts out of every valid rate, said only in the mapping's
counts, where a NaN score, the same exclusion, was named in a warning: both are now.

Trials of two Terminal-Bench runs merged in one ``results.json`` (a task's attempt 1 from one
run, attempt 2 from another, each trial's name ending with its run's id) were read as one
run's attempts unless a ``run_metadata.json`` lay beside the file; merged runs with different
``n_attempts`` were already refused. They are refused by their run ids now too.

A τ² ``termination_reason`` spelled otherwise than τ² writes it (``"MAX_STEPS"``, ``"Max
Steps"``) was read as an end not known here and decided by its reward: an edited stop scored
1 was a success where ``max_steps`` is a failure. It is refused, as Terminal-Bench's failure
modes of another spelling were (one helper for both now).

Integer attempt labels spanning more attempts than any task has (τ-bench trials 0 and 2 of
every task, trial 1 of none) were a lost attempt in every task without a word: the warning on
tasks with fewer attempts than others sees only tasks that differ. It is named now.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.test_imports_formats import EVAL, PLAN, Store, log, sample, write_json
from tests.test_imports_round4 import simulation, tau2_file
from tests.test_imports_round14 import tb_run, tb_trial
from tests.test_imports_round43 import _imported, _reasons


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path)


def _scores(value: Any) -> dict[str, Any]:
    return {"match": {"value": value}}


def _archive(
    path: Path, held: list[dict[str, Any]], listed: list[dict[str, Any]], *, finished: bool = True
) -> Path:
    """An ``.eval`` archive holding *held*, whose summaries (``summaries.json`` once finished,
    else the journal's) list *listed*."""
    summaries = [{"id": s["id"], "epoch": s["epoch"], "input": "q", "target": "a",
                  "scores": s["scores"], "error": None, "limit": None, "completed": True,
                  "uuid": s["uuid"]} for s in listed]  # fmt: skip
    header = log(None)
    del header["samples"]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps({"version": 2, "eval": EVAL,
                                                            "plan": PLAN}))  # fmt: skip
        for s in held:
            archive.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        if finished:
            archive.writestr("header.json", json.dumps(header))
            archive.writestr("summaries.json", json.dumps(summaries))
        else:
            archive.writestr("_journal/summaries/1.json", json.dumps(summaries))
    return path


# --- a sample the archive's summaries do not list ----------------------------------------

RUN = [sample(1, 1, _scores("I")), sample(2, 1, _scores("I"))]
ADDED = sample("added", 1, _scores("C"))


def _unlisted_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "not in the archive's summaries.json" in line]


def test_a_sample_added_to_a_finished_archive_is_named(store: Store, tmp_path: Path) -> None:
    path = _archive(tmp_path / "a.eval", [*RUN, ADDED], RUN)
    batch, err = _imported(store, path)
    (line,) = _unlisted_lines(err)
    assert "1 sample held is not" in line and "'added' epoch 1" in line
    assert "after its run" in line and str(path) in line
    assert _reasons(store, batch)[("added", 1)] == "success"  # imported as given, and said


def test_many_added_samples_are_counted_and_the_first_named(store: Store, tmp_path: Path) -> None:
    added = [sample(f"x{i}", 1, _scores("C")) for i in range(7)]
    _, err = _imported(store, _archive(tmp_path / "a.eval", [*RUN, *added], RUN))
    (line,) = _unlisted_lines(err)
    assert "7 samples held are not" in line and "and 2 more" in line


@pytest.mark.parametrize("finished", [True, False])
def test_an_archive_listing_every_sample_it_holds_says_nothing_of_it(
    store: Store, tmp_path: Path, finished: bool
) -> None:
    held = [*RUN, ADDED]
    _, err = _imported(store, _archive(tmp_path / "a.eval", held, held, finished=finished))
    assert _unlisted_lines(err) == []


def test_an_unfinished_archive_whose_journal_lags_is_not_called_edited(
    store: Store, tmp_path: Path
) -> None:
    """A journal's summaries are written after their samples: a crash between the two
    leaves samples unlisted, and the log's status says it did not finish."""
    _, err = _imported(store, _archive(tmp_path / "a.eval", [*RUN, ADDED], RUN, finished=False))
    assert _unlisted_lines(err) == []
    assert "not 'success'" in err


# --- samples without the deciding score ------------------------------------------------


def _unscored_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "ended without an error or a limit" in line]


def test_samples_without_a_score_are_named_as_left_out(store: Store, tmp_path: Path) -> None:
    samples = [sample(1, 1, _scores("C")), sample(2, 1, {}), sample(3, 1, None)]
    batch, err = _imported(store, write_json(tmp_path / "l.json", log(samples)))
    (line,) = _unscored_lines(err)
    assert "2 samples" in line and "no score at all" in line and "grader_failure" in line
    reasons = _reasons(store, batch)
    assert reasons[("2", 1)] == reasons[("3", 1)] == "grader_failure"


def test_samples_without_the_chosen_scorer_are_named(store: Store, tmp_path: Path) -> None:
    samples = [sample(1, 1, {"a": {"value": "C"}}), sample(2, 1, {"b": {"value": "C"}}),
               sample(3, 1, {"a": {"value": "I"}, "b": {"value": "C"}})]  # fmt: skip
    batch, err = _imported(store, write_json(tmp_path / "l.json", log(samples)), "--scorer", "a")
    (line,) = _unscored_lines(err)
    assert "1 sample" in line and "no score from --scorer a" in line
    assert _reasons(store, batch)[("2", 1)] == "grader_failure"


def test_samples_each_scored_or_stopped_say_nothing_of_it(store: Store, tmp_path: Path) -> None:
    samples = [
        sample(1, 1, _scores("C")),
        sample(2, 1, None, error={"message": "boom", "traceback": ""}),
        sample(3, 1, _scores("I"), limit={"type": "message", "limit": 10}),
    ]
    _, err = _imported(store, write_json(tmp_path / "l.json", log(samples)))
    assert _unscored_lines(err) == []


# --- Terminal-Bench trials of two runs ---------------------------------------------------

OTHER_RUN = "2026-09-01__10-00-00"


def test_trials_of_two_runs_in_one_file_are_refused(store: Store, tmp_path: Path) -> None:
    later = tb_trial("hello", 2, False, trial_name=f"hello.2-of-2.{OTHER_RUN}")
    path = write_json(tmp_path / "results.json", tb_run([tb_trial("hello", 1, True), later]))
    err = store.refused(path)
    assert f"{path}:results[1]: trial_name:" in err
    assert f"is of run '{OTHER_RUN}'" in err and "results[0] is of run" in err


def test_trials_of_two_runs_are_refused_whichever_task(store: Store, tmp_path: Path) -> None:
    other = tb_trial("fix", 1, True, trial_name=f"fix.1-of-2.{OTHER_RUN}")
    trials = [tb_trial("hello", 1, True), tb_trial("hello", 2, False), other]
    path = write_json(tmp_path / "results.json", tb_run(trials))
    assert "results[2]: trial_name:" in store.refused(path)


def test_trials_of_one_run_are_read(store: Store, tmp_path: Path) -> None:
    trials = [tb_trial("hello", 1, True), tb_trial("hello", 2, False), tb_trial("fix", 1, True)]
    batch, _ = _imported(store, write_json(tmp_path / "results.json", tb_run(trials)))
    assert _reasons(store, batch)[("hello", 2)] == "agent_failure/incorrect"


# --- τ² ends of another spelling -------------------------------------------------------


@pytest.mark.parametrize("end", ["MAX_STEPS", "Max Steps", "max-steps", " max_steps", "USER_STOP"])
def test_a_tau2_end_spelled_otherwise_is_refused(store: Store, tmp_path: Path, end: str) -> None:
    sims = [simulation("1", 0, 1.0), simulation("1", 1, 1.0, termination_reason=end)]
    path = write_json(tmp_path / "results.json", tau2_file(sims))
    err = store.refused(path)
    assert f"{path}:simulations[1]: termination_reason: {end!r} is not how τ² writes" in err


def test_tau2_ends_as_written_and_new_ones_are_read(store: Store, tmp_path: Path) -> None:
    sims = [
        simulation("1", 0, 1.0),
        simulation("1", 1, 1.0, termination_reason="max_steps"),
        simulation("1", 2, 0.0, termination_reason="some_new_end"),  # a later version's
    ]
    batch, err = _imported(store, write_json(tmp_path / "results.json", tau2_file(sims)))
    reasons = _reasons(store, batch)
    assert reasons[("1", 2)] == "agent_failure/step_limit"
    assert "'some_new_end' has no mapping" in err


# --- integer labels no task fills ------------------------------------------------------


def _tau(trials: list[int]) -> list[dict[str, Any]]:
    return [{"task_id": task, "reward": 1.0, "info": {}, "traj": [], "trial": trial}
            for task in (0, 1) for trial in trials]  # fmt: skip


def _skipped_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "but no task has more than" in line]


def test_a_trial_every_task_lacks_is_named(store: Store, tmp_path: Path) -> None:
    _, err = _imported(store, write_json(tmp_path / "t.json", _tau([0, 2])))
    (line,) = _skipped_lines(err)
    assert "labels run from 0 to 2 (3 attempts), but no task has more than 2" in line


def test_an_epoch_every_sample_lacks_is_named(store: Store, tmp_path: Path) -> None:
    samples = [sample(i, e, _scores("C")) for i in (1, 2) for e in (1, 3)]
    _, err = _imported(store, write_json(tmp_path / "l.json", log(samples)))
    assert len(_skipped_lines(err)) == 1


def test_a_row_file_skipping_an_attempt_everywhere_is_named(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("task_id,attempt,success\nt1,1,true\nt1,3,false\nt2,1,true\nt2,3,false\n")
    assert len(_skipped_lines(_imported(store, path)[1])) == 1


@pytest.mark.parametrize("trials", [[0, 1, 2], [0], [0, 1]])
def test_labels_each_task_fills_say_nothing_of_it(
    store: Store, tmp_path: Path, trials: list[int]
) -> None:
    _, err = _imported(store, write_json(tmp_path / "t.json", _tau(trials)))
    assert _skipped_lines(err) == []

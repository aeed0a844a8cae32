"""Task validity: prove every task before trusting its results (DESIGN principle 6).

- :func:`validate_task` / :func:`validate_suite`: reset, solvable, other routes,
  discriminating, grader sensitivity, grader determinism, grader mutation testing
  (:class:`MutationFigures`) and tool robustness, each with evidence; :func:`ensure_valid`
  proves only what changed since the last proof (cached in the run store).
- :func:`lock_suite` / :func:`check_lock` / :func:`require_lock`: pin the suite that was proven.
- :func:`regress`: turn a failing run into a regression task with its trajectory as known-bad.
- :func:`check_environment`: the environment conformance checker.
"""

from groundstate.validation.checks import CHECKS, validate_task
from groundstate.validation.conformance import EnvironmentMaker, check_environment
from groundstate.validation.lock import (
    LOCK_FILE,
    SuiteLockMismatch,
    check_lock,
    lock_suite,
    require_lock,
)
from groundstate.validation.regress import RegressionRefused, regress
from groundstate.validation.results import (
    CheckOutcome,
    ClassCounts,
    MutantRecord,
    MutationFigures,
    SuiteValidity,
    TaskValidity,
)
from groundstate.validation.suite import (
    InvalidTasks,
    ensure_valid,
    require_valid,
    validate_suite,
    validation_key,
)

__all__ = [
    "CHECKS",
    "LOCK_FILE",
    "CheckOutcome",
    "ClassCounts",
    "EnvironmentMaker",
    "InvalidTasks",
    "MutantRecord",
    "MutationFigures",
    "RegressionRefused",
    "SuiteLockMismatch",
    "SuiteValidity",
    "TaskValidity",
    "check_environment",
    "check_lock",
    "ensure_valid",
    "lock_suite",
    "regress",
    "require_lock",
    "require_valid",
    "validate_suite",
    "validate_task",
    "validation_key",
]

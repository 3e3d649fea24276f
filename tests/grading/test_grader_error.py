"""A grader that crashes is a "grader error", never the agent's "invalid submission": only a
submission the grader rejects with InvalidSubmission is invalid. It still counts as a failed run,
in every success rate, and --mlab-resume does not run it again: a submission can be made to crash
a grader that trusts it, and that must not take a failed run out of the denominator."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.grading.grader import Grade
from pytest_mlab.grading.verdict import judge
from pytest_mlab.outcomes import Failure
from pytest_mlab.results.resume import finished_result
from pytest_mlab.results.signing import results_key
from tests.grading.support import task
from tests.helpers import toy_run

REJECTING = ("from pytest_mlab.task_api import InvalidSubmission\n"
             "def score(workspace, answers):\n    raise InvalidSubmission('submission.txt is empty')\n")
CRASHING = "def score(workspace, answers):\n    return {}['answer']\n"
WRONG_TYPE = "def score(workspace, answers):\n    return 'high'\n"
NOT_FINITE = "def score(workspace, answers):\n    return float('nan')\n"


def test_a_crashing_grader_is_a_grader_error_and_still_a_failed_run():
    verdict = judge(task(), 0.5, Grade(None, "the grader failed: KeyError: 'answer'", grader_failed=True),
                    "final answer", "success")
    assert verdict.failure == Failure.GRADER_ERROR == "grader error"
    assert not verdict.passed and verdict.improvement is None
    assert verdict.message == "grader error: the grader failed: KeyError: 'answer'"


def test_a_grader_error_wins_over_a_claim_and_over_the_baseline_assertion():
    crashed = Grade(None, "the grader failed: boom", grader_failed=True)
    assert judge(task(), 0.5, crashed, "final answer", "success", unmeasured=("0.91",)).failure == "grader error"
    assert judge(task(), 0.5, crashed, "step limit", "baseline").failure == "grader error"


def test_a_rejected_submission_stays_invalid_and_the_agents_failure():
    verdict = judge(task(), 0.5, Grade(None, "submission.txt is empty"), "final answer", "success")
    assert verdict.failure == Failure.INVALID_SUBMISSION


@pytest.mark.parametrize("grader, failure, reason", [
    (CRASHING, "grader error", "the grader failed: "),
    (WRONG_TYPE, "grader error", "the grader returned 'high', not a number"),
    (REJECTING, "invalid submission", "submission.txt is empty"),
    (NOT_FINITE, "invalid submission", "the grader returned nan, not a finite number"),
])
def test_the_runner_tells_a_grader_bug_from_a_bad_submission(tmp_path, grader, failure, reason):
    result = toy_run(tmp_path, grader)
    assert result.end_reason == "final answer" and result.failure == failure
    assert not result.valid and result.invalid_reason.startswith(reason)
    assert result.infrastructure is False
    assert result.message.startswith("grader error: " if failure == "grader error" else "invalid submission: ")
    # --mlab-resume keeps both: a re-run would hand an agent that crashed its grader another try
    assert finished_result(Path(result.run_dir), result.run_id, "n", results_key(Path(result.run_dir).parents[1])) is not None


def test_a_run_that_crashes_its_grader_stays_in_every_success_denominator(tmp_path):
    from pytest_mlab.results.aggregate import aggregate

    result = toy_run(tmp_path, CRASHING)
    (row,) = aggregate([result])["groups"]
    assert row["runs"] == 1 and row["infrastructure_failures"] == 0
    assert row["success_rate"] == 0.0 and row["success_rate_excluding_infrastructure"] == 0.0

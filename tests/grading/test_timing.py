"""The timing arithmetic (pytest_mlab/grading/timing.py) on measured folders written by hand."""

from __future__ import annotations

import json
import math

import pytest

from pytest_mlab.errors import GradingError, InvalidSubmission
from pytest_mlab.grading.measured import executions
from pytest_mlab.grading.timing import MIN_WORK_S, SLOW_BOUND, Timing, read_timing, relative_time
from tests.grading.support import measured_folder


def test_relative_time_subtracts_mean_start_up_from_the_mean_of_each(tmp_path):
    measured = measured_folder(tmp_path, submission=[1.2, 0.7, 0.9], starter=[2.4, 2.2, 2.6], overhead=[0.25, 0.2, 0.3])
    assert relative_time(measured, "work.py") == pytest.approx((2.8 / 3 - 0.25) / (2.4 - 0.25))


def test_one_lucky_execution_does_not_decide_the_score():
    """A grading of llama-inference's unchanged starter against itself on a loaded 2-core machine
    (bench/timing_stability.py): the starter's third execution ran undisturbed. The ratio of
    minimums made that 1.39, outside the tolerance of 0.25; the ratio of means stays inside."""
    timing = Timing(3, submission=(14.23, 17.29, 14.15), starter=(15.39, 14.87, 11.61), overhead=(5.91, 5.10, 6.05))
    assert abs(timing.relative - 1.0) < 0.25


def report(measured, subject: str, result: dict) -> None:
    """What the measured process wrote to result.json, in each of its executions."""
    for run in executions(measured, subject):
        (run.out / "result.json").write_text(json.dumps(result))


@pytest.mark.parametrize("starter_on_gpu", [True, False])
def test_on_a_gpu_the_harness_wall_clock_decides_and_nothing_the_submission_reports(tmp_path, starter_on_gpu):
    """The starter says it ran on a GPU: the harness's wall-clock seconds are compared, start-up
    subtracted; the submission's own claims (a GPU time, a GPU of its own) are never read."""
    measured = measured_folder(tmp_path, submission=[50.0] * 3, starter=[40.0] * 3, overhead=[5.0] * 3,
                               walls={"submission": [9.0, 7.0, 8.0], "starter": [12.0, 13.0, 14.0],
                                      "overhead": [2.0, 3.0, 2.5]})
    report(measured, "submission", {"on_gpu": True, "gpu_seconds": 1e-9})
    report(measured, "starter", {"on_gpu": starter_on_gpu})
    expected = (8.0 - 2.5) / (13.0 - 2.5) if starter_on_gpu else (50.0 - 5.0) / (40.0 - 5.0)
    assert relative_time(measured, "inference.py") == pytest.approx(expected)


def test_the_starter_scores_one():
    assert Timing(3, (2.0, 2.1, 2.2), (2.2, 2.0, 2.1), (0.1, 0.1, 0.1)).relative == pytest.approx(1.0)


@pytest.mark.parametrize("submission", [0.2, 0.1, 0.05])
def test_work_below_the_resolution_counts_as_the_floor(submission):
    """A submission measured at or below start-up (noise) neither divides into ~0 nor goes negative."""
    timing = Timing(1, (submission,), (2.2,), (0.2,))
    assert timing.relative == pytest.approx(MIN_WORK_S / 2.0)


def test_a_starter_no_slower_than_start_up_is_a_grading_error():
    with pytest.raises(GradingError, match="the unchanged starter took no more time than start-up alone"):
        Timing(1, (1.0,), (0.2,), (0.3,)).relative


@pytest.mark.parametrize("bad", [0.0, -1000.0, math.nan, math.inf])
def test_impossible_submission_times_make_it_invalid(tmp_path, bad):
    measured = measured_folder(tmp_path, submission=[1.0, bad, 1.0], starter=[2.0] * 3, overhead=[0.1] * 3)
    with pytest.raises(InvalidSubmission, match="work.py: impossible CPU time"):
        relative_time(measured, "work.py")


def test_impossible_starter_times_are_a_grading_error(tmp_path):
    measured = measured_folder(tmp_path, submission=[1.0] * 3, starter=[2.0, -5.0, 2.0], overhead=[0.1] * 3)
    with pytest.raises(GradingError, match="impossible CPU time -5.0 s measured for the starter"):
        relative_time(measured, "work.py")


def test_a_backend_without_cpu_time_is_a_grading_error(tmp_path):
    measured = measured_folder(tmp_path, submission=[1.0] * 3, starter=[2.0] * 3, overhead=[None] * 3)
    with pytest.raises(GradingError, match="reported no CPU time for the overhead"):
        relative_time(measured, "work.py")


def test_a_missing_repeat_is_a_grading_error(tmp_path):
    measured = measured_folder(tmp_path, submission=[1.0] * 2, starter=[2.0] * 3, overhead=[0.1] * 3)
    with pytest.raises(GradingError, match="timed the submission 2 times, not 3"):
        relative_time(measured, "work.py")


def test_a_failed_submission_execution_makes_it_invalid(tmp_path):
    measured = measured_folder(tmp_path, submission=[1.0, 1.0], starter=[2.0], overhead=[0.1], complete=False,
                               failed=("submission", 1, 3))
    with pytest.raises(InvalidSubmission, match=r"work.py: the submission execution 2 exited with status 3 .*boom"):
        read_timing(measured, "work.py")


@pytest.mark.parametrize("subject, message", [("starter", "timing the unchanged starter failed"),
                                              ("overhead", r"timing start-up alone \(the overhead execution\) failed")])
def test_a_failed_starter_or_overhead_execution_is_a_grading_error(tmp_path, subject, message):
    measured = measured_folder(tmp_path, submission=[1.0], starter=[2.0], overhead=[0.1], complete=False,
                               failed=(subject, 0, None))
    with pytest.raises(GradingError, match=f"{message}: .* did not finish within 60 s"):
        read_timing(measured, "work.py")


def test_a_measurement_stopped_for_want_of_cpu_accounting_says_so(tmp_path):
    measured = measured_folder(tmp_path, submission=[None], starter=[], overhead=[], complete=False,
                               stopped="the bwrap sandbox cannot count the CPU time of what it runs here")
    with pytest.raises(GradingError, match="stopped before timing every execution: the bwrap sandbox cannot count"):
        read_timing(measured, "work.py")


# ------------------------------------------------------------------ the slow bound


def test_a_measurement_stopped_at_the_slow_bound_scores_the_bound(tmp_path):
    """One submission execution, no overhead: the record's ``slow`` decides, nothing is divided."""
    measured = measured_folder(tmp_path, submission=[40.0], starter=[2.0], overhead=[], slow=True)
    assert relative_time(measured, "work.py") == SLOW_BOUND


def test_a_submission_stopped_at_the_slow_bound_has_no_execution_to_check(tmp_path):
    """Graders check the output of every submission execution; the one the harness stopped as slow
    has none, and is left out (only where the harness's own record says it stopped it)."""
    measured = measured_folder(tmp_path, submission=[None], starter=[2.0], overhead=[], slow=True,
                               failed=("submission", 0, None))
    assert executions(measured) == []
    assert [run.subject for run in executions(measured, "starter")] == ["starter"]
    (measured / "timing.json").write_text(json.dumps({"repeats": 1, "complete": False, "slow": False}))
    assert [run.timed_out for run in executions(measured)] == [True]


def test_every_round_counts_alike_whatever_its_place(tmp_path):
    """The same executions in another order of rounds give the same score: no round is paired
    with another side's round of the same place, so a disturbed round is shared out, not divided."""
    first = measured_folder(tmp_path / "a", submission=[2.1, 2.6, 2.0], starter=[2.0, 2.7, 2.9], overhead=[0.1] * 3)
    shuffled = measured_folder(tmp_path / "b", submission=[2.0, 2.1, 2.6], starter=[2.9, 2.0, 2.7], overhead=[0.1] * 3)
    assert relative_time(first, "work.py") == pytest.approx(relative_time(shuffled, "work.py"))
    assert relative_time(first, "work.py") == pytest.approx((6.7 / 3 - 0.1) / (7.6 / 3 - 0.1))


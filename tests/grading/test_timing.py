"""The timing arithmetic (pytest_mlab/grading/timing.py) on measured folders written by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_mlab.errors import GradingError, InvalidSubmission
from pytest_mlab.grading.timing import AGREEMENT, MIN_WORK_S, Timing, measured_enough, read_timing, relative_time
from tests.grading.support import measured_folder


def test_relative_time_subtracts_start_up_from_the_fastest_of_each(tmp_path):
    measured = measured_folder(tmp_path, submission=[1.2, 0.7, 0.9], starter=[2.4, 2.2, 2.6], overhead=[0.25, 0.2, 0.3])
    assert relative_time(measured, "work.py") == pytest.approx((0.7 - 0.2) / (2.2 - 0.2))


def test_the_starter_scores_one():
    assert Timing(3, (2.0, 2.1, 2.2), (2.0, 2.3, 2.1), (0.1, 0.1, 0.1)).relative == pytest.approx(1.0)


@pytest.mark.parametrize("submission", [0.2, 0.1, 0.05])
def test_work_below_the_resolution_counts_as_the_floor(submission):
    """A submission measured at or below start-up (noise) neither divides into ~0 nor goes negative."""
    timing = Timing(1, (submission,), (2.2,), (0.2,))
    assert timing.relative == pytest.approx(MIN_WORK_S / 2.0)


def test_a_starter_no_slower_than_start_up_is_a_grading_error():
    with pytest.raises(GradingError, match="the unchanged starter took no more CPU time than start-up alone"):
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


# ------------------------------------------------------------------ when a measurement has settled


@pytest.mark.parametrize("submission, starter, overhead, settled", [
    ((2.0, 2.05, 2.6), (2.0, 2.02, 2.5), (0.1, 0.1, 0.1), True),  # every fastest time seen twice
    ((1.5, 2.05, 2.6), (2.0, 2.02, 2.5), (0.1, 0.1, 0.1), False),  # the submission's fastest seen once
    ((2.0, 2.05, 2.6), (2.6, 2.02, 2.5), (0.1, 0.1, 0.1), False),  # the starter's fastest seen once
    ((2.0, 2.05, 2.6), (2.0, 2.02, 2.5), (0.1, 0.4, 0.3), False),  # start-up seen once at its fastest
    ((0.12, 0.13, 0.2), (2.0, 2.02, 2.5), (0.1, 0.1, 0.1), True),  # a fast submission settles on its own scale
    ((2.0,), (2.0,), (0.1,), False),  # one round shows nothing twice
    ((0.2, 0.2), (0.2, 0.2), (0.3, 0.3), False),  # no starter work to judge by
])
def test_a_measurement_settles_when_each_fastest_time_is_seen_twice(submission, starter, overhead, settled):
    assert Timing(len(starter), submission, starter, overhead).settled is settled


def test_agreement_is_a_share_of_the_starters_work():
    work = 2.0 - 0.1
    inside, outside = 2.0 + 0.9 * AGREEMENT * work, 2.0 + 1.1 * AGREEMENT * work
    assert Timing(2, (2.0, inside), (2.0, 2.0), (0.1, 0.1)).settled
    assert not Timing(2, (2.0, outside), (2.0, 2.0), (0.1, 0.1)).settled


def gpu_report(measured: Path, name: str, seconds: list[float]) -> None:
    for index, value in enumerate(seconds):
        (measured / name / str(index) / "out" / "result.json").write_text(json.dumps({"gpu_seconds": value}))


def test_a_gpu_measurement_settles_on_the_gpu_seconds(tmp_path):
    """CPU times that never agree do not matter where the starter reports its GPU seconds."""
    cpu = {"submission": [9.0, 5.0, 7.0], "starter": [3.0, 8.0, 6.0], "overhead": [0.1, 0.1, 0.1]}
    measured = measured_folder(tmp_path, **cpu)
    assert not measured_enough(measured, cpu)
    gpu_report(measured, "submission", [0.51, 0.5, 0.9])
    gpu_report(measured, "starter", [1.0, 1.01, 1.3])
    assert measured_enough(measured, cpu)
    gpu_report(measured, "starter", [1.0, 1.3, 1.5])
    assert not measured_enough(measured, cpu)


def test_unusable_times_end_the_measurement(tmp_path):
    """More rounds would not help: grading rejects the submission (or says the grading broke)."""
    cpu = {"submission": [1.0, -3.0], "starter": [2.0, 2.5], "overhead": [0.1, 0.3]}
    assert measured_enough(measured_folder(tmp_path, **cpu), cpu)

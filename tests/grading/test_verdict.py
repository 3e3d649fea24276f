"""Improvement in the metric's direction, the success rule, and what each item asserts."""

from __future__ import annotations

import math

import pytest

from pytest_mlab.grading.grader import Grade
from pytest_mlab.grading.verdict import improvement, judge
from pytest_mlab.spec.models import FunctionRef, Metric
from tests.grading.support import task


@pytest.mark.parametrize("score, baseline, higher, expected", [
    (0.581, 0.525, True, 0.10667),
    (0.5, 0.525, True, -0.04762),
    (90.0, 100.0, False, 0.10),      # lower is better: a smaller error is an improvement
    (110.0, 100.0, False, -0.10),
    (-0.9, -1.0, True, 0.10),        # negative baselines use |baseline|
])
def test_improvement_is_direction_aware(score, baseline, higher, expected):
    assert improvement(score, baseline, higher) == pytest.approx(expected, abs=1e-4)


def test_improvement_over_a_zero_baseline():
    assert math.isinf(improvement(0.3, 0.0, True))
    assert improvement(0.0, 0.0, True) == 0.0


def test_success_needs_more_than_the_threshold():
    passed = judge(task(), 0.525, Grade(0.581), "final answer", "success")
    assert passed.passed and passed.success and passed.failure is None
    assert passed.message == "accuracy 0.581 vs baseline 0.525: +10.7%, needs > +10%"
    exactly = judge(task(), 1.0, Grade(1.1), "final answer", "success")
    assert exactly.improvement == pytest.approx(0.1)
    below = judge(task(), 0.525, Grade(0.55), "final answer", "success")
    assert not below.passed and below.failure == "below threshold"


def test_custom_threshold_and_units():
    verdict = judge(task("minimize", success_improvement=0.5, metric=Metric("run_time", "minimize",
                                                                          FunctionRef("g.py", "s"), unit="s")),
                    2.0, Grade(1.2), "final answer", "success")
    assert not verdict.passed and verdict.message == "run_time 1.2 s vs baseline 2 s: +40.0%, needs > +50%"


def test_baseline_agent_must_reproduce_the_baseline_within_tolerance():
    spec = task(baseline_tolerance=0.02)
    assert judge(spec, 0.60, Grade(0.605), "final answer", "baseline").passed
    drifted = judge(spec, 0.60, Grade(0.65), "final answer", "baseline")
    assert not drifted.passed and drifted.failure == "baseline mismatch"
    assert "reproduced within ±2%" in drifted.message


def test_a_measured_variant_brings_its_own_tolerance():
    spec = task(baseline_tolerance=0.5, baseline_tolerances={"mini": 0.015})
    assert judge(spec, 0.60, Grade(0.608), "final answer", "baseline", variant="mini").passed
    drifted = judge(spec, 0.60, Grade(0.61), "final answer", "baseline", variant="mini")
    assert not drifted.passed and "reproduced within ±1.5%" in drifted.message
    assert judge(spec, 0.60, Grade(0.61), "final answer", "baseline", variant="full").passed  # the spec's 50%


def test_a_pinned_baseline_asks_only_that_the_unchanged_starter_does_not_already_succeed():
    spec = task(baseline_pinned=frozenset({"full"}))
    skeleton = judge(spec, 0.5, Grade(None, "no submission.csv in the workspace"), "final answer", "baseline",
                     variant="full")
    assert skeleton.passed and skeleton.failure is None
    assert skeleton.message == ("the unchanged starter writes no valid submission (no submission.csv in the "
                                "workspace); the baseline is pinned at 0.5 instead")
    near = judge(spec, 0.5, Grade(0.52), "final answer", "baseline", variant="full")
    assert near.passed and "(pinned), the unchanged starter must not already beat it by more than +10%" in near.message
    trained = judge(spec, 0.5, Grade(0.9), "final answer", "baseline", variant="full")
    assert not trained.passed and trained.failure == "baseline mismatch"
    # against a value that is not pinned: no submission fails, and so does 0.53 (outside ±5%)
    assert not judge(spec, 0.5, Grade(None, "no submission.csv"), "final answer", "baseline", variant="mini").passed
    assert not judge(spec, 0.5, Grade(0.53), "final answer", "baseline", variant="mini").passed
    # an agent is judged against a pinned value like any other
    assert judge(spec, 0.5, Grade(0.56), "final answer", "success", variant="full").success


def test_invalid_submission_and_crash_messages():
    invalid = judge(task(), 0.5, Grade(None, "submission.csv: missing column 'target'"), "final answer", "success")
    assert invalid.message == "invalid submission: submission.csv: missing column 'target'"
    assert invalid.failure == "invalid submission"
    crashed = judge(task(), 0.5, Grade(0.9), "crashed", "success", "Traceback...\nRuntimeError: boom\n")
    assert not crashed.passed and crashed.message == "the run crashed: RuntimeError: boom"


def test_limits_are_failure_categories_when_the_run_falls_short():
    assert judge(task(), 0.5, Grade(0.5), "step limit", "success").failure == "step limit"
    assert judge(task(), 0.5, Grade(0.5), "timeout", "success").failure == "timeout"
    assert judge(task(), 0.5, Grade(0.5), "no final answer", "success").failure == "no final answer"
    assert judge(task(), 0.5, Grade(0.9), "step limit", "success").passed  # judged on the workspace


def test_missing_baseline_says_where_to_add_it():
    verdict = judge(task(), None, Grade(0.9), "final answer", "success")
    assert not verdict.passed and "add it under 'baseline:' in specs/tasks/t.yaml" in verdict.message

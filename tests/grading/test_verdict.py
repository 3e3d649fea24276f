"""Improvement in the metric's direction, the success rule, and what each item asserts."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_mlab.grading.grader import Grade
from pytest_mlab.grading.verdict import improvement, judge
from pytest_mlab.spec.models import FunctionRef, Metric, TaskSpec


def task(direction: str = "maximize", **overrides) -> TaskSpec:
    spec = TaskSpec(name="t", description="d", source="specs/tasks/t.yaml", line=1, assets=Path("."),
                    metric=Metric("accuracy", direction, FunctionRef("grader.py", "score")), data={})
    return replace(spec, **overrides)


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

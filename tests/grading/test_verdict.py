"""Improvement in the metric's direction, the success rule, and what each item asserts."""

from __future__ import annotations

import math

import pytest

from pytest_mlab.grading.grader import Grade
from pytest_mlab.grading.starter_run import StarterRun
from pytest_mlab.grading.verdict import improvement, judge
from pytest_mlab.spec.models import FunctionRef, Measure, Metric
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


NUMPY_2 = StarterRun("train.py", 1, "  File \"train.py\", line 105, in <module>\n    pre_output = cnn.forward(batch)\n"
                                  "ValueError: setting an array element with a sequence.")
SKELETON = StarterRun("train.py", 1, "Traceback (most recent call last):\n  File \"train.py\", line 40\n"
                                    "NameError: name 'train_mae' is not defined")
FINISHED = StarterRun("train.py", 0, "")
NO_FILE = Grade(None, "no submission.csv in the workspace")


def test_a_crashed_starter_fails_its_baseline_item_even_where_the_grader_scores_the_workspace():
    # the original vectorization under NumPy 2: train.py crashes, eval.py returns 1e10 for the missing file
    pinned = task("minimize", baseline={"full": 6.1742}, baseline_pinned=frozenset({"full"}))
    verdict = judge(pinned, 6.1742, Grade(1e10), "final answer", "baseline", variant="full", starter=NUMPY_2)
    assert not verdict.passed and verdict.failure == "baseline mismatch"
    assert verdict.message.startswith("the unchanged starter train.py failed with exit code 1, yet the workspace "
                                      "was scored 1e+10: a score the starter did not write")
    assert verdict.message.endswith("the end of its error output:\n    File \"train.py\", line 105, in <module>\n"
                                    "      pre_output = cnn.forward(batch)\n"
                                    "  ValueError: setting an array element with a sequence.")
    assert judge(pinned, 6.1742, Grade(1e10), "final answer", "baseline", variant="full").passed  # not known: as before


def test_a_stale_submission_left_behind_by_a_crashed_starter_does_not_reproduce_the_baseline():
    # the attack: the graded file reproduces the measured mean, but the starter never wrote it
    measured = task(baseline={"mini": 0.6}, baseline_tolerance=0.02)
    stale = judge(measured, 0.6, Grade(0.6), "final answer", "baseline", variant="mini", starter=NUMPY_2)
    assert not stale.passed and stale.failure == "baseline mismatch"
    assert "a file left from before it ran" in stale.message
    # a skeleton's crash is no excuse either: a score it did not write is not the starter's
    skeleton = task(baseline={"mini": 0.5}, baseline_pinned=frozenset({"mini"}))
    assert not judge(skeleton, 0.5, Grade(0.4), "final answer", "baseline", variant="mini", starter=SKELETON).passed
    assert judge(measured, 0.6, Grade(0.6), "final answer", "baseline", variant="mini", starter=FINISHED).passed


def test_a_skeleton_that_stops_at_its_unwritten_model_still_passes_against_its_pinned_value():
    skeleton = task("minimize", baseline={"mini": 1e10, "full": 1e10}, baseline_pinned=frozenset({"mini", "full"}))
    verdict = judge(skeleton, 1e10, NO_FILE, "final answer", "baseline", variant="full", starter=SKELETON)
    assert verdict.passed and verdict.failure is None
    assert verdict.message == ("the unchanged starter train.py failed with exit code 1 (NameError: name 'train_mae' "
                               "is not defined) and writes no valid submission, as a skeleton does (no submission.csv "
                               "in the workspace); the baseline is pinned at 1e+10 instead")


def test_no_valid_submission_fails_where_the_starter_is_known_to_write_one():
    # ogbn-arxiv: mini measured (the starter writes a submission there), full pinned at the paper's value
    arxiv = task(baseline={"mini": 0.49, "full": 0.3134}, baseline_pinned=frozenset({"full"}))
    verdict = judge(arxiv, 0.3134, NO_FILE, "final answer", "baseline", variant="full", starter=NUMPY_2)
    assert not verdict.passed and verdict.failure == "invalid submission"
    assert verdict.message.startswith("the unchanged starter train.py failed with exit code 1 and wrote no valid "
                                      "submission (no submission.csv in the workspace), though it writes one on the "
                                      "'mini' data (whose baseline is not pinned)")
    assert "ValueError: setting an array element with a sequence." in verdict.message
    assert not judge(arxiv, 0.3134, NO_FILE, "final answer", "baseline", variant="full").passed  # even unknown
    # a starter that ran to the end must have written its submission; one stopped at its time limit is no skeleton
    skeleton = task(baseline={"full": 0.5}, baseline_pinned=frozenset({"full"}))
    ran = judge(skeleton, 0.5, NO_FILE, "final answer", "baseline", variant="full", starter=FINISHED)
    assert not ran.passed and ran.message.startswith("the unchanged starter train.py ran to the end (exit code 0) "
                                                     "but wrote no valid submission")
    stopped = StarterRun("train.py", None, "the script was stopped after 5m (time limit); output before it was "
                                           "stopped:")
    late = judge(skeleton, 0.5, NO_FILE, "final answer", "baseline", variant="full", starter=stopped)
    assert not late.passed and late.message.startswith("the unchanged starter train.py did not run to the end (the "
                                                       "script was stopped after 5m (time limit)")
    # a measured baseline: the invalid submission's message names the crash
    measured = judge(task(baseline={"mini": 0.6}), 0.6, NO_FILE, "final answer", "baseline", variant="mini",
                     starter=SKELETON)
    assert not measured.passed and measured.message.startswith("the unchanged starter train.py failed with exit code "
                                                               "1 and wrote no valid submission")


def test_a_task_with_a_measure_step_is_judged_on_its_score_however_the_starter_ran():
    # bibtex-generation's starter is a tool that exits 2 without its arguments; the measure step runs it itself
    tool = task(baseline={"mini": 0.3}, metric=Metric("f1", "maximize", FunctionRef("g.py", "s"),
                                                      measure=Measure(script="measure.py")))
    assert judge(tool, 0.3, Grade(0.3), "final answer", "baseline", variant="mini", starter=SKELETON).passed


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

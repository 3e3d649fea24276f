"""Judge a graded run: improvement over the baseline in the metric's direction, success, failure category."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pytest_mlab.grading.grader import Grade
from pytest_mlab.outcomes import LIMIT_ENDS, EndReason, Failure
from pytest_mlab.spec.models import TaskSpec


@dataclass(frozen=True)
class Verdict:
    passed: bool
    success: bool
    improvement: float | None
    message: str
    failure: Failure | None  # None when the run succeeded at what it was expected to do


def improvement(score: float, baseline: float, higher_is_better: bool) -> float:
    """(score - baseline) / |baseline|, sign flipped for lower-is-better metrics (the paper's rule)."""
    if baseline == 0:
        return float("inf") if (score > 0) == higher_is_better and score != 0 else 0.0
    change = (score - baseline) / abs(baseline)
    return (change if higher_is_better else -change) + 0.0  # never -0.0


def judge(task: TaskSpec, baseline: float | None, grade: Grade, end_reason: EndReason | str, expect: str,
          detail: str | None = None, unmeasured: Sequence[str] = (), variant: str | None = None) -> Verdict:
    """The item's assertion. ``expect='baseline'``: the submission reproduces the recorded baseline
    within the variant's tolerance, or, where the baseline is pinned rather than measured (a skeleton
    starter), the unchanged starter does not already succeed against it;
    ``expect='success'``: it beats the baseline by more than the task's threshold. ``unmeasured``:
    scores the agent claimed that no executed code printed (see grading/claims.py); a failed run
    that claimed such a score is categorised "claimed but unmeasured". A grader that crashed is a
    "grader error", a category of its own that still counts as a failed run."""
    metric = task.metric
    end_reason = EndReason(end_reason)
    if end_reason == EndReason.WORKSPACE_LIMIT:  # nothing was graded: the agent's own failure
        return Verdict(False, False, None, f"workspace limit: {detail or 'see the trace'}", Failure.WORKSPACE_LIMIT)
    if end_reason.cut_short:
        cause = detail.strip().splitlines()[-1] if detail and detail.strip() else "see the trace"
        return Verdict(False, False, None, f"the run {end_reason}: {cause}", Failure.of_end(end_reason))
    if grade.grader_failed:
        # Not "invalid submission" (it says nothing about the submission), and not the harness's
        # failure either: a submission can be made to crash a grader that trusts it, and an agent
        # must not buy its way out of the success denominator, or a retry under --mlab-resume, that
        # way. Fix the grader, then `pytest-mlab rescore` re-grades the saved snapshots.
        return Verdict(False, False, None, f"grader error: {grade.invalid_reason}", Failure.GRADER_ERROR)
    pinned = variant in task.baseline_pinned
    if not grade.valid and expect == "baseline" and pinned and baseline is not None:
        return Verdict(True, False, None, f"the unchanged starter writes no valid submission "
                       f"({grade.invalid_reason}); the baseline is pinned at {baseline:.4g} instead", None)
    if not grade.valid:
        if unmeasured and end_reason == EndReason.FINAL_ANSWER and expect == "success":
            return Verdict(False, False, None, f"invalid submission: {grade.invalid_reason}; yet the agent claimed "
                           f"{unmeasured[0]}, which no executed code printed", Failure.CLAIMED_UNMEASURED)
        ended = f" (the run ended by {end_reason})" if end_reason.is_limit else ""
        return Verdict(False, False, None, f"invalid submission: {grade.invalid_reason}{ended}",
                       Failure.INVALID_SUBMISSION)
    score = grade.score
    unit = f" {metric.unit}" if metric.unit else ""
    if baseline is None:
        return Verdict(False, False, None,
                       f"{metric.name} {score:.4g}{unit}, but the task records no baseline for this data variant; "
                       f"add it under 'baseline:' in {task.source}", Failure.NO_BASELINE)
    gain = improvement(score, baseline, metric.higher_is_better)
    head = f"{metric.name} {score:.4g}{unit} vs baseline {baseline:.4g}{unit}: {gain:+.1%}"
    success = gain > task.success_improvement
    if expect == "baseline" and pinned:
        message = (f"{head} (pinned), the unchanged starter must not already beat it by more than "
                   f"{task.success_improvement:+.0%}")
        return Verdict(not success, success, gain, message, Failure.BASELINE_MISMATCH if success else None)
    if expect == "baseline":
        tolerance = task.tolerance(variant) if variant is not None else task.baseline_tolerance
        deviation = abs(score - baseline) / abs(baseline) if baseline else abs(score)
        passed = deviation <= tolerance
        message = f"{head}, the baseline must be reproduced within ±{tolerance * 100:.3g}%"
        return Verdict(passed, success, gain, message, None if passed else Failure.BASELINE_MISMATCH)
    message = f"{head}, needs > {task.success_improvement:+.0%}"
    if success:
        return Verdict(True, True, gain, message, None)
    failure = Failure.of_end(end_reason) if end_reason in LIMIT_ENDS else Failure.BELOW_THRESHOLD
    if failure == Failure.BELOW_THRESHOLD and unmeasured:
        failure = Failure.CLAIMED_UNMEASURED
        message += f"; the agent claimed {unmeasured[0]}, which no executed code printed"
    return Verdict(False, False, gain, message, failure)

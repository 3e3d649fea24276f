"""Judge a graded run: improvement over the baseline in the metric's direction, success, failure category."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from pytest_mlab.grading.grader import Grade
from pytest_mlab.grading.starter_run import StarterRun
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


#: How the message of a run cut short opens, before ": <detail>": a sentence, not "the run <end reason>".
CUT_SHORT_HEADS: dict[EndReason, str] = {
    EndReason.CRASHED: "the run crashed",
    EndReason.INTERRUPTED: "the run was interrupted",
    EndReason.PROVIDER_ERROR: "the LLM provider failed",
    EndReason.BUDGET_SPENT: "the session's LLM budget ran out",
    EndReason.HOST_LOST: "the sandbox's host stopped answering",
}


def cut_short_detail(message: str, end_reason: EndReason | str) -> str:
    """The detail in the message of a run cut short (what ``judge`` was given), for judging it again;
    also from messages saved before the heads above ("the run provider error: ...")."""
    end_reason = EndReason(end_reason)
    for head in (CUT_SHORT_HEADS.get(end_reason), f"the run {end_reason}"):
        if head and message.startswith(f"{head}: "):
            return message[len(head) + 2:]
    return message


def judge(task: TaskSpec, baseline: float | None, grade: Grade, end_reason: EndReason | str, expect: str,
          detail: str | None = None, unmeasured: Sequence[str] = (), variant: str | None = None,
          starter: StarterRun | None = None) -> Verdict:
    """The item's assertion. ``expect='baseline'``: the submission reproduces the recorded baseline
    within the variant's tolerance, or, where the baseline is pinned rather than measured (a skeleton
    starter), the unchanged starter does not already succeed against it; either way it must be the
    starter's own output (see :func:`_starter_verdict`; ``starter``: how its run ended, from the trace);
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
        return Verdict(False, False, None, f"{CUT_SHORT_HEADS[end_reason]}: {cause}", Failure.of_end(end_reason))
    if grade.grader_failed:
        # Not "invalid submission" (it says nothing about the submission), and not the harness's
        # failure either: a submission can be made to crash a grader that trusts it, and an agent
        # must not buy its way out of the success denominator, or a retry under --mlab-resume, that
        # way. Fix the grader, then `pytest-mlab rescore` re-grades the saved snapshots.
        return Verdict(False, False, None, f"grader error: {grade.invalid_reason}", Failure.GRADER_ERROR)
    pinned = variant in task.baseline_pinned
    if expect == "baseline" and baseline is not None:
        checked = _starter_verdict(task, baseline, grade, pinned, starter)
        if checked is not None:
            return checked
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


def _starter_verdict(task: TaskSpec, baseline: float, grade: Grade, pinned: bool,
                     starter: StarterRun | None) -> Verdict | None:
    """The baseline item's verdict where it turns on how the starter ran, else None (the score decides).

    A skeleton (the paper's house-price, spaceship-titanic, imdb) stops with an error at the model
    it leaves unwritten and writes no submission: that passes against a pinned value (not one
    stopped at its time limit: a skeleton stops at once). Anything else that is not the starter's
    own output fails: a workspace scored although the starter crashed (the grader's value for a
    missing file, or a file left from before it ran), a starter that ran to the end yet wrote
    nothing valid, and no valid submission from a starter that does write one (a variant whose
    baseline is measured or written, not pinned, shows that it does). A task with a measure step
    runs the submitted code itself, so how the starter ran says nothing there."""
    if starter is not None and task.metric.measure is not None:
        starter = None
    script = starter.script if starter is not None else task.starter
    writes = sorted(set(task.baseline) - task.baseline_pinned)  # variants where it wrote a valid submission
    if starter is not None and not starter.finished and grade.valid:
        return Verdict(False, False, None, f"the unchanged starter {script} {starter.how()}, yet the workspace was "
                       f"scored {grade.score:.4g}: a score the starter did not write (the grader's value for a "
                       f"missing submission, or a file left from before it ran); the baseline item needs the "
                       f"starter to run to the end and write its submission{starter.error_ending()}",
                       Failure.BASELINE_MISMATCH)
    if grade.valid:
        return None
    if starter is not None and starter.finished and pinned:
        return Verdict(False, False, None, f"the unchanged starter {script} {starter.how()} but wrote no valid "
                       f"submission ({grade.invalid_reason}); a skeleton stops with an error before it would "
                       f"write one, so the starter or the grader does not do what the task says",
                       Failure.INVALID_SUBMISSION)
    if pinned and not writes and (starter is None or starter.exit_code is not None):
        if starter is None:
            said = "the unchanged starter writes no valid submission"
        else:
            said = (f"the unchanged starter {script} {starter.how()} ({_last(starter.ending)}) and writes no valid "
                    f"submission, as a skeleton does")
        return Verdict(True, False, None, f"{said} ({grade.invalid_reason}); the baseline is pinned at "
                       f"{baseline:.4g} instead", None)
    if pinned or (starter is not None and not starter.finished):
        ran = f" {starter.how()} and" if starter is not None else ""
        known = (f", though it writes one on the {', '.join(repr(name) for name in writes)} data (whose baseline "
                 f"is not pinned)" if pinned else "")
        return Verdict(False, False, None, f"the unchanged starter {script}{ran} wrote no valid submission "
                       f"({grade.invalid_reason}){known}{starter.error_ending() if starter else ''}",
                       Failure.INVALID_SUBMISSION)
    return None


def _last(ending: str) -> str:
    """The last line of a starter's error output: the exception, as a skeleton raises it."""
    lines = ending.strip().splitlines()
    return lines[-1] if lines else "no output"

"""Grade what a finished run saved, outside any workspace: every step's snapshot
(--mlab-score-steps) or only the final one (``pytest-mlab rescore``), with the task's current
grader and baseline."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.grading.grader import Grade, grade_snapshot, keep_timing
from pytest_mlab.grading.starter_run import starter_run
from pytest_mlab.grading.verdict import Verdict, cut_short_detail, improvement, judge
from pytest_mlab.outcomes import EndReason
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.trace import SnapshotStore, read_trace
from pytest_mlab.trace.step_scores import write_step_scores


def score_steps(task: TaskSpec, run_dir: Path, data: PreparedData, baseline: float | None, *, sandbox: str,
                options: SandboxOptions) -> dict[str, Any]:
    """The score curve across steps, grading each distinct snapshot once (a measure step runs in
    a ``sandbox`` of that kind); written to the run's step_scores.json."""
    store = SnapshotStore(run_dir / "snapshots", fsync=False)
    steps = [(record["step"], record["snapshot"]) for record in read_trace(run_dir / "trace.jsonl")
             if record.get("type") == "step" and record.get("snapshot")]
    grades: dict[str, Grade] = {}
    curve = []
    for step, snapshot in steps:
        if snapshot not in grades:
            grades[snapshot] = grade_snapshot(task, store, snapshot, data, sandbox=sandbox, options=options)
        grade = grades[snapshot]
        gain = (improvement(grade.score, baseline, task.metric.higher_is_better)
                if grade.valid and baseline is not None else None)
        curve.append({"step": step, "snapshot": snapshot, "score": grade.score, "improvement": gain,
                      "invalid_reason": grade.invalid_reason})
    gains = [point["improvement"] for point in curve if point["improvement"] is not None
             and math.isfinite(point["improvement"])]
    payload = {"graded_snapshots": len(grades), "best_improvement": max(gains) if gains else None, "steps": curve}
    write_step_scores(run_dir, payload)
    return payload


def final_snapshot(records: list[dict[str, Any]]) -> str | None:
    """The snapshot the runner graded, from the trace's ``result`` record."""
    saved = next((record for record in reversed(records) if record.get("type") == "result"), None)
    return saved.get("snapshot") if saved else None


def regrade_final(task: TaskSpec, run_dir: Path, data: PreparedData, *, sandbox: str, label: str, variant: str,
                  end_reason: str, expect: str, message: str) -> tuple[Grade, Verdict, float | None] | None:
    """The run's final snapshot judged again: (grade, verdict, baseline), or None when the run
    never got as far as a graded snapshot (nothing to redo). A measure step runs in a ``sandbox``
    of that kind, with the task's limits."""
    trace = run_dir / "trace.jsonl"
    records = read_trace(trace) if trace.exists() else []
    snapshot = final_snapshot(records)
    if snapshot is None:
        return None
    grade = grade_snapshot(task, SnapshotStore(run_dir / "snapshots", fsync=False), snapshot, data, sandbox=sandbox,
                           options=SandboxOptions.for_task(task, task.limits, label))
    keep_timing(grade, run_dir)
    baseline = task.baseline.get(variant)
    detail = cut_short_detail(message, end_reason) if EndReason(end_reason).cut_short else None
    starter = starter_run(records, task.starter)
    return grade, judge(task, baseline, grade, end_reason, expect, detail, variant=variant, starter=starter), baseline

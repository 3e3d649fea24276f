"""Grade what a finished run saved: every step's snapshot (--mlab-score-steps) or only the final
one (``pytest-mlab rescore``), with the task's current grader, outside any workspace."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.grading.grader import Grade, grade_snapshot
from pytest_mlab.grading.verdict import improvement, judge
from pytest_mlab.results.record import RunResult
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.trace import SnapshotStore, read_trace

STEP_SCORES = "step_scores.json"


def score_steps(task: TaskSpec, run_dir: Path, data: PreparedData, baseline: float | None, *, sandbox: str,
                options: SandboxOptions) -> dict[str, Any]:
    """The score curve across steps, grading each distinct snapshot once (a measure step runs in
    a ``sandbox`` of that kind); written to step_scores.json."""
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
    (run_dir / STEP_SCORES).write_text(json.dumps(payload, indent=1) + "\n")
    return payload


def saved_step_scores(run_dir: Path | str | None) -> dict[str, Any] | None:
    if not run_dir:
        return None
    try:
        return json.loads((Path(run_dir) / STEP_SCORES).read_text())
    except (OSError, ValueError):
        return None


def final_snapshot(run_dir: Path) -> str | None:
    """The snapshot the runner graded, from the trace's ``result`` record."""
    records = read_trace(run_dir / "trace.jsonl")
    saved = next((record for record in reversed(records) if record.get("type") == "result"), None)
    return saved.get("snapshot") if saved else None


def rescore_run(result: RunResult, task: TaskSpec, data: PreparedData, *, sandbox: str) -> RunResult:
    """The same run judged again with the task's current grader and baseline (a measure step
    runs in a ``sandbox`` of that kind, with the task's limits)."""
    run_dir = Path(result.run_dir) if result.run_dir else None
    snapshot = final_snapshot(run_dir) if run_dir and (run_dir / "trace.jsonl").exists() else None
    if snapshot is None:
        return result  # nothing was graded (the harness failed before the run): nothing to redo
    grade = grade_snapshot(task, SnapshotStore(run_dir / "snapshots", fsync=False), snapshot, data, sandbox=sandbox,
                           options=SandboxOptions.for_task(task, task.limits, result.run_id))
    baseline = task.baseline.get(result.variant)
    detail = result.message.removeprefix(f"the run {result.end_reason}: ") if result.end_reason in (
        "crashed", "interrupted") else None
    verdict = judge(task, baseline, grade, result.end_reason, result.expect, detail)
    return replace(result, score=grade.score, baseline=baseline, valid=grade.valid,
                   invalid_reason=grade.invalid_reason, improvement=verdict.improvement, success=verdict.success,
                   passed=verdict.passed, failure=verdict.failure, message=verdict.message)

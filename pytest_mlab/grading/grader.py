"""Run a task's grader in its own process on a snapshot, with the hidden answers."""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.sandbox.environ import clean_environment
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.task_code import call_task_function
from pytest_mlab.trace import SnapshotStore

GRADER_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Grade:
    score: float | None
    invalid_reason: str | None = None  # set when the submission could not be scored

    @property
    def valid(self) -> bool:
        return self.invalid_reason is None


def grade_snapshot(task: TaskSpec, store: SnapshotStore, snapshot_id: str, answers: Path) -> Grade:
    """Materialise the snapshot outside any workspace and score it; grader failures are invalid submissions."""
    with tempfile.TemporaryDirectory(prefix="mlab-grade-") as scratch:
        workspace = Path(scratch) / "workspace"
        store.materialize(snapshot_id, workspace, link=False)
        submission = task.metric.submission
        if submission and not (workspace / submission).exists():
            return Grade(None, f"{submission} was not written; the task asks for it in the workspace")
        result = call_task_function(task.assets, task.metric.grader, {"workspace": workspace, "answers": answers},
                                    timeout=GRADER_TIMEOUT, env=clean_environment())
    if result.invalid is not None:
        return Grade(None, result.invalid)
    if result.error is not None:
        return Grade(None, f"the grader failed: {result.error}")
    value = result.value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return Grade(None, f"the grader returned {value!r}, not a finite number")
    return Grade(float(value))

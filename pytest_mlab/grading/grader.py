"""Run a task's grader in its own process on a snapshot, with the hidden answers.

The grader sees regular files only: the snapshot is recreated without its symbolic links (a
link the agent made is never followed on the host, so no hidden or private file reaches the
grader, its messages or the results through one), with the read-only data linked, not copied.
A task whose grader needs the agent's code run first has a measure step
(:mod:`pytest_mlab.grading.measure`), which runs that code in a sandbox of the run's kind; the
grader then gets the plain data it produced as a third argument, ``measured``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, Mapping

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.grading.measure import measure
from pytest_mlab.grading.measured import TIMING_FILE
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.sandbox.environ import clean_environment
from pytest_mlab.sandbox.workspace import scratch_folder
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.task_code import TaskCallResult, call_task_function
from pytest_mlab.trace import SnapshotStore

GRADER_TIMEOUT = 1800.0


@dataclass(frozen=True)
class Grade:
    score: float | None
    invalid_reason: str | None = None  # set when the submission could not be scored
    # the grader itself failed (raised something other than InvalidSubmission, died, timed out):
    # nothing is known about the submission, so the run is not the agent's failure
    grader_failed: bool = False
    # a timed task's measurement (the measure step's timing.json): rounds, every time, stopped as slow or
    # not; the run keeps it, so a surprising ratio can be read back
    timing: Mapping[str, Any] | None = None

    @property
    def valid(self) -> bool:
        return self.invalid_reason is None


def grade_snapshot(task: TaskSpec, store: SnapshotStore, snapshot_id: str, data: PreparedData, *, sandbox: str,
                   options: SandboxOptions) -> Grade:
    """Materialise the snapshot outside any workspace, run the task's measure step if it has one
    (in a ``sandbox`` of that kind, with ``options``), and score it. A submission the grader rejects
    (InvalidSubmission) is invalid; a grader that fails otherwise is a grader failure."""
    timing: Mapping[str, Any] | None = None
    with scratch_folder("grade") as scratch:
        workspace = Path(scratch) / "workspace"
        links = store.materialize_regular(snapshot_id, workspace, link_paths=data.public_files())
        submission = task.metric.submission
        if submission:
            linked = _through_link(submission, links)
            if linked is not None:
                return Grade(None, linked)
            if not (workspace / submission).exists():  # a file, or a folder (a saved model)
                return Grade(None, f"{submission} was not written; the task asks for it in the workspace")
        arguments = {"workspace": workspace, "answers": data.hidden}
        if task.metric.measure is not None:
            arguments["measured"] = measure(task, store, snapshot_id, data, sandbox, options, Path(scratch))
            timing = _timing_record(arguments["measured"])
        result = call_task_function(task.assets, task.metric.grader, arguments, timeout=GRADER_TIMEOUT,
                                    env=clean_environment())
    return replace(_judged(result), timing=timing)


def keep_timing(grade: Grade, run_dir: Path) -> None:
    """A timed task's measurement beside the run it scored (by the run, or by a rescore, whose
    measurement then replaces the run's), so a surprising ratio can be read back."""
    if grade.timing is not None:
        (Path(run_dir) / TIMING_FILE).write_text(json.dumps(dict(grade.timing), indent=1), encoding="utf-8")


def _judged(result: TaskCallResult) -> Grade:
    """The grader's answer as a grade: a score, an invalid submission, or a grader failure."""
    if result.invalid is not None:
        return Grade(None, result.invalid)
    if result.error is not None:
        return Grade(None, f"the grader failed: {result.error}", grader_failed=True)
    value = result.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):  # a grader bug, whatever was submitted
        return Grade(None, f"the grader returned {value!r}, not a number", grader_failed=True)
    if not math.isfinite(value):  # e.g. a score computed from the submission's NaN
        return Grade(None, f"the grader returned {value!r}, not a finite number")
    return Grade(float(value))


def _timing_record(measured: Path) -> Mapping[str, Any] | None:
    """The measure step's timing.json (timed tasks only), or None."""
    try:
        return json.loads((measured / TIMING_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _through_link(submission: str, links: list[str]) -> str | None:
    """The rejection when the submission is, or lies under, a symbolic link of the snapshot. It
    names only paths: nothing behind the link is read, let alone quoted."""
    path = PurePosixPath(submission)
    for link in links:
        if PurePosixPath(link) == path:
            return (f"{submission} is a symbolic link; graders read regular files only, so it was not graded "
                    f"(write the submission itself, not a link to it)")
        if PurePosixPath(link) in path.parents:
            return (f"{submission} lies under {link}, a symbolic link; graders read regular files only, so it "
                    f"was not graded (write the submission itself, not a link to it)")
    return None

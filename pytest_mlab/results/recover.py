"""This session's runs as their traces on disk tell them, for the results pytest's reports lost.

Results reach the controller on pytest reports; after Ctrl-C or a dead xdist worker, some never
arrive (the single process stops before it reports the interrupted item, reports in flight from
workers are dropped). Each run's trace names the session that started it, in its ``run`` record
and its ``result`` record, so at the end the controller reads back every run of its own session,
and none of another session sharing the output folder. A result record without the harness's
signature (results/signing.py) does not count as one: the run is shown as not graded.
"""

from __future__ import annotations

from pathlib import Path

from pytest_mlab.outcomes import EndReason
from pytest_mlab.results.record import JudgedBy, RunIdentity, RunResult
from pytest_mlab.results.signing import authentic, results_key

def recovered_results(out_dir: Path, session: str, *,
                      interrupted: bool) -> tuple[list[RunResult], list[RunResult]]:
    """Every run of ``session`` under ``out_dir/runs``, as (graded, unfinished): the saved result of
    each graded run, and for each run stopped before that a row saying so (``interrupted`` when the
    session was, else ``crashed``).

    Reads only the first and last line of each graded run's trace, so it stays cheap over many old
    runs; an unfinished run's trace is read whole, for its steps."""
    from pytest_mlab.trace.writer import first_record, last_record  # at the end only: configure stays light

    graded, unfinished = [], []
    for trace in sorted((out_dir / "runs").glob("*/trace.jsonl")):
        started = first_record(trace)
        if not started or started.get("type") != "run" or started.get("session") != session \
                or not started.get("nodeid"):
            continue
        last = last_record(trace) or started
        if last.get("type") == "result" and last.get("session") == session and authentic(last, results_key(out_dir)):
            graded.append(RunResult.from_dict(last))
        else:
            unfinished.append(_unfinished(started, last, trace, interrupted))
    return graded, unfinished


def _unfinished(started: dict[str, Any], last: dict[str, Any], trace: Path, interrupted: bool) -> RunResult:
    """The row of a run stopped before its result record: what its ``run`` record says of it, and
    the steps its trace holds."""
    from pytest_mlab.trace.writer import steps_taken

    end_reason = EndReason.INTERRUPTED if interrupted else EndReason.CRASHED
    why = "the session was interrupted" if interrupted else "its worker died"
    why = f"{why} before this run was graded"
    if last.get("type") == "grading stopped":  # Ctrl-C, and grading took longer than its bound (runner.py)
        why = str(last.get("detail"))
    return RunResult.crashed(
        RunIdentity.from_record(started, fallback_run_id=trace.parent.name),
        f"{why}; --mlab-resume runs it again", judged=JudgedBy.from_record(started),
        end_reason=end_reason, steps=steps_taken(trace),
        trace=str(trace), wall_time=round(max(0.0, last.get("t", 0.0) - started.get("t", 0.0)), 3))

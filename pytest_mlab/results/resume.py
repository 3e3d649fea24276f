"""--mlab-resume: reuse runs that finished in an earlier session, even one that was killed.

results.json is written only when a session ends, so the source of truth is each run's own
trace: the runner closes it with a ``result`` record only after the run was graded. A run whose
trace lacks that record (killed mid-run) is run again.
"""

from __future__ import annotations

from pathlib import Path

from pytest_mlab.errors import TraceError
from pytest_mlab.results.record import RunResult
from pytest_mlab.trace import read_trace


def finished_result(run_dir: Path, run_id: str, nodeid: str) -> RunResult | None:
    """The saved result of this very run (same run id), or None when it has to run again."""
    try:
        records = read_trace(run_dir / "trace.jsonl")
    except TraceError:
        return None
    saved = next((record for record in reversed(records) if record.get("type") == "result"), None)
    if saved is None or saved.get("run_id") != run_id:
        return None
    result = RunResult.from_dict(saved)
    result.nodeid = nodeid
    result.resumed = True
    return result

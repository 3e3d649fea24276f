"""--mlab-resume: reuse runs that finished in an earlier session, even one that was killed.

results.json is written only when a session ends, so the source of truth is each run's own
trace: the runner closes it with a ``result`` record only after the run was graded. A run whose
trace lacks that record (killed mid-run) is run again, and so is one whose result says it did not
end on the agent's account: it was interrupted (Ctrl-C), or the harness failed (``infrastructure``).
A trace holding a result record without the harness's signature (results/signing.py) is not
trusted either: something else wrote to it, so the run is run again, with a warning.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from pytest_mlab.errors import TraceError, UnsignedRecordWarning
from pytest_mlab.outcomes import EndReason
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.signing import authentic
from pytest_mlab.trace import read_trace


def finished_result(run_dir: Path, run_id: str, nodeid: str, key: bytes) -> RunResult | None:
    """The saved result of this very run (same run id), or None when it has to run again. The whole
    trace is read, so a corrupt one is not trusted; ``key`` signs the results folder's records."""
    try:
        records = read_trace(run_dir / "trace.jsonl")
    except TraceError:
        return None
    results = [record for record in records if record.get("type") == "result"]
    if not all(authentic(record, key) for record in results):
        warnings.warn(UnsignedRecordWarning(
            f"{run_dir / 'trace.jsonl'}: a result record there was not written by pytest-mlab (it lacks this results "
            f"folder's signature); --mlab-resume runs {run_id} again"), stacklevel=2)
        return None
    saved = results[-1] if results else None
    if saved is None or saved.get("run_id") != run_id:
        return None
    result = RunResult.from_dict(saved)
    if not ended_on_agent_account(result):
        return None
    result.nodeid = nodeid
    result.resumed = True
    return result


def ended_on_agent_account(result: RunResult) -> bool:
    """True when the run's end says something about the agent (final answer, a limit, its own
    crash); False when Ctrl-C or the harness cut it short, so its score says nothing."""
    return result.end_reason != EndReason.INTERRUPTED and not result.infrastructure

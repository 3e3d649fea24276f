"""--mlab-resume: reuse runs that finished in an earlier session, even one that was killed.

results.json is written only when a session ends, so the source of truth is each run's own
trace: the runner closes it with a ``result`` record only after the run was graded. A run whose
trace lacks that record (killed mid-run) is run again, and so is one whose result says it did not
end on the agent's account: it was interrupted (Ctrl-C), or the harness failed (``infrastructure``).
"""

from __future__ import annotations

from pathlib import Path

from pytest_mlab.errors import TraceError
from pytest_mlab.outcomes import EndReason
from pytest_mlab.results.record import RunResult
from pytest_mlab.trace import read_trace


def finished_result(run_dir: Path, run_id: str, nodeid: str) -> RunResult | None:
    """The saved result of this very run (same run id), or None when it has to run again. The whole
    trace is read, so a corrupt one is not trusted."""
    try:
        records = read_trace(run_dir / "trace.jsonl")
    except TraceError:
        return None
    saved = next((record for record in reversed(records) if record.get("type") == "result"), None)
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

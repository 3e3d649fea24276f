"""The runner writes a run's result record only once the snapshot it names is on disk: the
snapshot's sync runs in the background, and the result record is what --mlab-resume trusts."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_mlab.env import Environment
from pytest_mlab.trace import TraceWriter
from pytest_mlab.trace.snapshots import durability
from pytest_mlab.results.resume import finished_result
from pytest_mlab.results.signing import results_key
from tests.helpers import folder_chain, toy_run


def test_the_result_record_waits_for_the_final_snapshots_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    final, result_written = threading.Event(), threading.Event()
    real_sync, real_write, real_final = durability.sync_filesystem, TraceWriter.write, Environment.final_snapshot

    def sync(path: Path) -> None:
        if final.is_set():  # the final snapshot's sync holds out until the result record is written, or 2 s
            result_written.wait(2)
        real_sync(path)
        log.append("synced")

    def write(self: TraceWriter, record: dict[str, Any]) -> None:
        if record.get("type") == "result":
            result_written.set()
            log.append("result")
        real_write(self, record)

    def final_snapshot(self: Environment) -> str:
        (self.sandbox.workspace / "left_behind.txt").write_text("a dying run's last file\n")  # a new blob: a sync
        final.set()
        return real_final(self)

    monkeypatch.setattr(durability, "sync_filesystem", sync)
    monkeypatch.setattr(TraceWriter, "write", write)
    monkeypatch.setattr(Environment, "final_snapshot", final_snapshot)
    assert toy_run(tmp_path).passed
    assert log[-2:] == ["synced", "result"]


def test_a_workspace_beyond_its_limits_is_the_agents_failure_kept_by_resume(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder chain 3,000 deep left in the workspace: the run ends as ``workspace limit``, with its
    result record, never as an infrastructure failure that --mlab-resume would run again."""
    real_final = Environment.final_snapshot

    def final_snapshot(self: Environment) -> str | None:
        folder_chain(self.sandbox.workspace, 3000)
        return real_final(self)

    monkeypatch.setattr(Environment, "final_snapshot", final_snapshot)
    result = toy_run(tmp_path)
    assert (result.end_reason, result.failure, result.infrastructure) == ("workspace limit", "workspace limit", False)
    assert result.score is None and "nested more than 100 deep" in result.message
    assert finished_result(Path(result.run_dir), result.run_id, "again", results_key(tmp_path / "out")) is not None


class _CtrlC:
    """An agent that writes the exact answer, then is stopped by Ctrl-C."""

    def run(self, env: Environment) -> None:
        env.step("Write File", {"file_name": "submission.txt", "content": "100"})
        raise KeyboardInterrupt


SLOW_GRADER = """import time
from pathlib import Path

def score(workspace: Path, answers: Path) -> float:
    time.sleep(30)
    return 0.0
"""


@pytest.mark.parametrize("grader", [None, SLOW_GRADER], ids=["graded", "grading-too-long"])
def test_ctrl_c_grades_the_final_workspace_within_a_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          grader: str | None) -> None:
    from pytest_mlab import runner
    from pytest_mlab.results.recover import recovered_results
    from pytest_mlab.trace import read_trace

    monkeypatch.setattr(runner, "load_agent", lambda plan, llm: _CtrlC())
    # a bound the slow grader's 30 s overruns; the toy's own grading keeps a loaded machine's margin
    monkeypatch.setattr(runner, "INTERRUPTED_GRADING_S", 1.0 if grader else 60.0)
    with pytest.raises(KeyboardInterrupt):
        toy_run(tmp_path, grader)

    trace = tmp_path / "out" / "runs" / "toy-mini-reference-s0" / "trace.jsonl"
    last = read_trace(trace)[-1]
    graded, unfinished = recovered_results(tmp_path / "out", None, interrupted=True)  # type: ignore[arg-type]
    (row,) = graded + unfinished
    assert row.end_reason == "interrupted" and row.infrastructure and row.steps == 1 and not row.passed
    if grader is None:  # the exact answer was graded, though the run does not pass
        assert last["type"] == "result" and row.valid and row.score == 0.0
    else:  # stopped about 1.1 s into grading, not 30 s: the row says so
        assert last["type"] == "grading stopped" and row.score is None
        assert "grading after Ctrl-C did not finish within 1s; --mlab-resume runs it again" == row.message

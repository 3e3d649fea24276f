"""The budget ledger shared by processes, and resuming from a run's own trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mlab.errors import UnsignedRecordWarning

from pytest_mlab.results.budget import Ledger, over_budget
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.resume import finished_result
from pytest_mlab.results.signing import signed
from tests.results.builders import KEY, run, saved_run
from tests.results.support import in_processes


def _spend(out_dir: str, index: int) -> None:
    from pathlib import Path

    for _ in range(10):
        Ledger(Path(out_dir)).add(f"run-{index}", 0.25)


def test_ledger_sums_what_several_processes_spent(tmp_path):
    in_processes(_spend, tmp_path, 3)
    assert Ledger(tmp_path).spent() == 3 * 10 * 0.25


def test_budget_stops_once_reached_and_a_new_session_starts_from_nothing(tmp_path):
    ledger = Ledger(tmp_path)
    assert over_budget(ledger, None) is None and over_budget(ledger, 1.0) is None
    ledger.add("a", 0.6)
    assert over_budget(ledger, 1.0) is None
    ledger.add("b", 0.6)
    reason = over_budget(ledger, 1.0)
    assert reason.startswith("budget:") and "$1.20" in reason and "--mlab-max-cost=$1" in reason
    with open(ledger.path, "a") as handle:
        handle.write('{"run_id": "c", "co')  # a worker died mid-line
    assert ledger.spent() == 1.2
    ledger.reset()
    assert ledger.spent() == 0.0 and over_budget(ledger, 1.0) is None


def test_resume_takes_the_result_record_of_the_same_run(tmp_path):
    saved = saved_run(tmp_path / "run", [("Write File", {"a.py": "x"}, "ok")], run(passed=False, success=False))
    got = finished_result(tmp_path / "run", saved.run_id, "new/node::id", KEY)
    assert got.resumed and got.nodeid == "new/node::id"
    assert (got.passed, got.score, got.run_id) == (False, saved.score, saved.run_id)


def test_runs_without_a_result_record_run_again(tmp_path):
    saved_run(tmp_path / "killed", [("Write File", {"a.py": "x"}, "ok")], None)  # killed mid-run
    assert finished_result(tmp_path / "killed", "x", "n", KEY) is None
    assert finished_result(tmp_path / "never-started", "x", "n", KEY) is None
    saved = saved_run(tmp_path / "other", [], run())
    assert finished_result(tmp_path / "other", "digits[mini-reference-s1]", "n", KEY) is None  # another run's folder
    (tmp_path / "other" / "trace.jsonl").write_text("garbage\n" + (tmp_path / "other" / "trace.jsonl").read_text())
    assert finished_result(tmp_path / "other", saved.run_id, "n", KEY) is None  # a corrupt trace is not trusted


@pytest.mark.parametrize("ended", [dict(end_reason="interrupted", failure="interrupted"),
                                   dict(end_reason="crashed", failure="crashed", infrastructure=True)],
                         ids=["interrupted", "harness-failed"])
def test_runs_cut_short_by_ctrl_c_or_the_harness_run_again(tmp_path, ended):
    saved = saved_run(tmp_path / "run", [("Write File", {"a.py": "x"}, "ok")], run(passed=False, **ended))
    assert finished_result(tmp_path / "run", saved.run_id, "n", KEY) is None


@pytest.mark.parametrize("end_reason", ["final answer", "step limit", "timeout", "token limit", "no final answer",
                                        "crashed"])
def test_runs_that_ended_on_the_agents_account_are_kept(tmp_path, end_reason):
    saved = saved_run(tmp_path / "run", [], run(end_reason=end_reason, passed=False))  # "crashed": the agent's bug
    got = finished_result(tmp_path / "run", saved.run_id, "n", KEY)
    assert got is not None and got.resumed and got.end_reason == end_reason and not got.infrastructure


def test_a_result_saved_before_infrastructure_was_recorded_still_loads_and_is_kept(tmp_path):
    old = run().to_dict()
    del old["infrastructure"]
    assert RunResult.from_dict(old).infrastructure is False
    saved_run(tmp_path / "run", [], None, extra_records=[signed({"type": "result", **old}, KEY)])
    assert finished_result(tmp_path / "run", old["run_id"], "n", KEY).resumed


def forge(trace: Path, **changes) -> None:
    """Append a copy of the trace's last record with ``changes``, keeping its mac (or dropping it)."""
    last = json.loads(trace.read_text().splitlines()[-1])
    with open(trace, "a") as handle:
        handle.write(json.dumps({**last, **changes}) + "\n")


@pytest.mark.parametrize("changes", [dict(passed=True, success=True, score=1.0), dict(mac=None)],
                         ids=["forged", "unsigned"])
def test_a_result_record_the_harness_did_not_sign_makes_the_run_run_again(tmp_path, changes):
    saved = saved_run(tmp_path / "run", [], run(passed=False, success=False, score=0.1))
    forge(tmp_path / "run" / "trace.jsonl", **changes)
    with pytest.warns(UnsignedRecordWarning, match="not written by pytest-mlab"):
        assert finished_result(tmp_path / "run", saved.run_id, "n", KEY) is None
    with pytest.warns(UnsignedRecordWarning):  # another folder's key
        assert finished_result(tmp_path / "run", saved.run_id, "n", bytes(32)) is None

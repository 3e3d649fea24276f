"""The README's main job, `pytest specs/ -n 2`, as a real sub-run on the repository's own specs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mlab.sandbox.registry import resolve_kind
from pytest_mlab.trace import read_trace

REPO = Path(__file__).resolve().parents[2]
TASKS = ("diabetes", "digits", "vectorization")


@pytest.mark.slow
def test_main_job_runs_every_smoke_task_with_both_default_agents(pytester: pytest.Pytester, tmp_path):
    out = tmp_path / "results"
    result = pytester.runpytest_subprocess(
        str(REPO / "specs"), "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), "-n", "2",
        "-p", "no:cacheprovider", "--mlab-out", str(out), "--mlab-cache", str(tmp_path / "cache"), timeout=900)
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines([
        "*pytest-mlab results*",
        "*task*agent*seed*score*baseline*improvement*success*steps*time*result*",
        "*diabetes*baseline*PASS*", "*diabetes*reference*yes*PASS*",
        "*digits*baseline*PASS*", "*digits*reference*yes*PASS*",
        "*vectorization*baseline*PASS*", "*vectorization*reference*yes*PASS*",
        f"results: {out / 'results.json'}",
    ])
    assert result.stdout.str().count("pytest-mlab results") == 1  # printed once, by the controller

    results = json.loads((out / "results.json").read_text())
    assert results["version"] == 1 and results["settings"]["variant"] == "mini"
    runs = {(run["task"], run["agent"]): run for run in results["runs"]}
    assert {run["sandbox"] for run in runs.values()} == {resolve_kind("auto")}  # isolated where bwrap works
    assert set(runs) == {(task, agent) for task in TASKS for agent in ("baseline", "reference")}
    for task in TASKS:
        baseline, reference = runs[(task, "baseline")], runs[(task, "reference")]
        assert baseline["valid"] and baseline["passed"] and baseline["expect"] == "baseline"
        assert abs(baseline["score"] - baseline["baseline"]) <= 0.5 * abs(baseline["baseline"])
        assert reference["success"] and reference["improvement"] > 0.10 and reference["passed"]
        assert reference["end_reason"] == "final answer" and reference["failure"] is None
        trace = read_trace(Path(reference["trace"]))
        assert trace[0]["type"] == "run" and trace[-1]["type"] == "result"
        assert [r["action"] for r in trace if r["type"] == "step"][-2:] == ["Execute Script", "Final Answer"]
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert len(csv_lines) == 7 and csv_lines[0].startswith("nodeid,run_id,task,agent")

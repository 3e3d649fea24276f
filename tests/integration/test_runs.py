"""Real pytest sub-runs of the toy project: crashes, interrupts and dead xdist workers lose nothing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_mlab.trace import read_trace
from tests.helpers import copy_toy_project
AGENTS = {
    "crasher": "os.kill(os.getpid(), signal.SIGKILL)",
    "raiser": "raise RuntimeError('agent bug')",
    "quitter": "raise KeyboardInterrupt",
    "idler": "pass",
    "hanger": "import time; time.sleep(600)",
    "looper": "[env.step('Execute Script', {'script_name': 'train.py'}) for _ in range(10)]",
}


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """The toy project plus agents that misbehave after writing a correct submission."""
    root = copy_toy_project(pytester.path)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    lines = ["import os, signal", "from pytest_mlab.agents import Agent", ""]
    for name, body in AGENTS.items():
        lines.append(textwrap.dedent(f"""
            class {name.title()}(Agent):
                def run(self, env):
                    env.step("Write File", {{"file_name": "submission.txt", "content": "100"}})
                    {body}
            """))
        (root / "agents" / f"{name}.yaml").write_text(
            f"kind: Agent\nname: {name}\nimplementation: misbehaving:{name.title()}\n"
            f"actions: [Write File, Execute Script, Final Answer]\n")
    (root / "misbehaving.py").write_text("\n".join(lines))
    return root


def run(pytester: pytest.Pytester, root: Path, *args: str) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", "-p", "no:benchmark", "--mlab-cache",
                                           str(root / ".cache"), *args, timeout=300)
    path = root / "mlab-results" / "results.json"
    return result, json.loads(path.read_text()) if path.exists() else {}


def runs_by_agent(results: dict) -> dict[str, dict]:
    return {run["agent"]: run for run in results["runs"]}


@pytest.mark.slow
def test_dead_worker_is_reported_as_crashed_and_other_results_are_kept(pytester, project):
    result, results = run(pytester, project, "-n", "2", "--agent=baseline,crasher,reference")
    result.assert_outcomes(passed=2, failed=1)
    runs = runs_by_agent(results)
    assert runs["crasher"]["failure"] == "crashed" and not runs["crasher"]["passed"]
    assert runs["baseline"]["passed"] and runs["reference"]["passed"]
    result.stdout.fnmatch_lines(["*crashed while running*toy[[]mini-crasher-s0[]]*"])  # xdist saw the worker die
    result.stdout.fnmatch_lines(["*toy*crasher*FAIL: crashed*"])
    trace = read_trace(project / "mlab-results/runs/toy-mini-crasher-s0/trace.jsonl")
    assert [r["action"] for r in trace if r["type"] == "step"] == ["Write File"]  # flushed before the kill


@pytest.mark.slow
def test_agent_exception_still_grades_the_final_workspace(pytester, project):
    result, results = run(pytester, project, "--agent=raiser")
    result.assert_outcomes(failed=1)
    run_row = runs_by_agent(results)["raiser"]
    assert run_row["end_reason"] == "crashed" and run_row["failure"] == "crashed"
    assert run_row["valid"] and run_row["score"] == 0.0  # the submission written before the crash was graded
    trace = read_trace(project / "mlab-results/runs/toy-mini-raiser-s0/trace.jsonl")
    ended = [r for r in trace if r["type"] == "ended"][0]
    assert ended["reason"] == "crashed" and "RuntimeError: agent bug" in ended["detail"]
    assert trace[-1]["type"] == "result"
    result.stdout.fnmatch_lines(["*the run crashed: RuntimeError: agent bug*"])


@pytest.mark.slow
def test_ctrl_c_leaves_a_graded_trace(pytester, project):
    result, _results = run(pytester, project, "--agent=quitter")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    trace = read_trace(project / "mlab-results/runs/toy-mini-quitter-s0/trace.jsonl")
    assert [r["reason"] for r in trace if r["type"] == "ended"] == ["interrupted"]
    final = trace[-1]
    assert final["type"] == "result" and final["valid"] and final["score"] == 0.0


@pytest.mark.slow
def test_no_final_answer_and_step_limit_are_failure_categories(pytester, project):
    result, results = run(pytester, project, "--agent=idler,looper", "--max-steps=3")
    result.assert_outcomes(passed=1, failed=1)
    runs = runs_by_agent(results)
    # success is judged on the final workspace, with or without a Final Answer
    assert runs["idler"]["end_reason"] == "no final answer" and runs["idler"]["passed"]
    # the looper re-ran the poor starter, which overwrote its good submission
    assert runs["looper"]["end_reason"] == "step limit" and runs["looper"]["steps"] == 3
    assert runs["looper"]["failure"] == "step limit"


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_an_agent_stuck_between_steps_is_stopped_at_the_time_limit_and_graded(pytester, project, workers):
    result, results = run(pytester, project, "--agent=hanger", "--max-time=2s", *workers)
    result.assert_outcomes(passed=1)  # it wrote the right answer before hanging
    row = runs_by_agent(results)["hanger"]
    assert row["end_reason"] == "timeout" and row["valid"] and row["score"] == 0.0
    assert row["wall_time"] < 60
    trace = read_trace(project / "mlab-results/runs/toy-mini-hanger-s0/trace.jsonl")
    ended = [r for r in trace if r["type"] == "ended"][0]
    assert ended["reason"] == "timeout" and "max_time 2s" in ended["detail"]

"""The research agent in real pytest sub-runs, driven offline by scripted responses.

The golden trajectory is the shipped example (examples/scripted/diabetes.yaml): inspect, Edit
Script (AI), run, submit an improvement; its item must pass. The second one breaks the script
with an edit, sees the error, undoes it and redoes the edit.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_mlab.trace import read_trace
from tests.helpers import REPO, read_results, run_specs

HERE = Path(__file__).parent


def diabetes_project(dest: Path) -> Path:
    """The diabetes task, the repository's actions and agents, and the shipped scripted examples."""
    for folder in ("specs/actions", "agents", "task_assets/diabetes", "examples/scripted"):
        shutil.copytree(REPO / folder, dest / folder)
    (dest / "specs/tasks").mkdir(parents=True)
    shutil.copy2(REPO / "specs/tasks/diabetes.yaml", dest / "specs/tasks/diabetes.yaml")
    (dest / "specs/baselines").mkdir()
    shutil.copy2(REPO / "specs/baselines/diabetes.yaml", dest / "specs/baselines/diabetes.yaml")
    (dest / "pytest.ini").write_text("")
    return dest


def step_actions(trace: str) -> list[str]:
    return [r["action"] for r in read_trace(trace) if r["type"] == "step"]


@pytest.mark.slow
def test_golden_trajectory_passes_with_the_shipped_example(pytester, mlab_cache):
    project = diabetes_project(pytester.path)
    result = run_specs(pytester, "--agent=research", "--llm=scripted:examples/scripted", cache_dir=mlab_cache,
                       subprocess=True)
    result.assert_outcomes(passed=1)
    run = read_results(project)["runs"][0]
    assert run["agent"] == "research" and run["end_reason"] == "final answer" and run["success"] is True
    assert run["score"] < 0.9 * run["baseline"]  # MAE: lower is better
    assert step_actions(run["trace"]) == ["List Files", "Append Summary to Research Log", "Inspect Script Lines",
                                          "Append Summary to Research Log", "Edit Script (AI)",
                                          "Append Summary to Research Log", "Execute Script",
                                          "Append Summary to Research Log", "Retrieval from Research Log",
                                          "Final Answer"]  # retrieval: a step of its own once steps leave the context
    records = read_trace(run["trace"])
    edit = next(r for r in records if r.get("action") == "Edit Script (AI)")
    assert "+FEATURES = [\"age\", \"sex\", \"bmi\"" in edit["observation"]
    assert [sub["action"] for sub in edit["low_level"]] == ["Read File", "Write File"]
    assert [r["role"] for r in records if r["type"] == "llm"].count("edit") == 1
    final = next(r for r in records if r.get("action") == "Final Answer")
    assert "Validation MAE" in final["thinking"]["Fact Check"] and "Action" not in final["thinking"]
    assert run["unmeasured_claims"] == []  # every number it claims was printed by the script it ran


@pytest.mark.slow
def test_a_breaking_edit_is_seen_undone_and_redone(pytester, mlab_cache):
    project = diabetes_project(pytester.path)
    shutil.copy2(HERE / "scripted/diabetes-undo.yaml", project / "undo.yaml")
    result = run_specs(pytester, "--agent=research", "--llm=scripted:undo.yaml", cache_dir=mlab_cache,
                       subprocess=True)
    result.assert_outcomes(passed=1)
    run = read_results(project)["runs"][0]
    steps = [r for r in read_trace(run["trace"]) if r["type"] == "step"
             and r["action"] not in ("Append Summary to Research Log", "Retrieval from Research Log")]
    assert [s["action"] for s in steps] == ["Inspect Script Lines", "Edit Script (AI)", "Execute Script",
                                            "Undo Edit Script", "Edit Script (AI)", "Execute Script", "Final Answer"]
    assert "SyntaxError" in steps[2]["observation"] and "failed with exit code" in steps[2]["observation"]
    assert 'FEATURES = ["age", "sex"]' in steps[3]["observation"]  # the starter is back
    assert "Validation MAE: 44.445" in steps[5]["observation"]
    assert run["success"] is True

"""The README's main job, `pytest specs/ -n 2`, as a real sub-run on the repository's own specs,
over the catalogue's quick tasks: two xdist workers, every default agent, the controller's report
and results files, traces and verdicts, as the whole main job has them.

The whole main job (every task, about 4 to 6 minutes on 2 cores: bench/main_job.py) is the
README's measured sample, not a test, which keeps the suite within CI's budget: what it adds over
this sub-run is each long task's own starter and reference, and those
are tested where they live (tests/tasks/test_<task>.py run each task's real starter, grader and
data recipe on mini data; tests/grading/test_timing.py and the tiny timed task cover timed
grading; tests/tasks/test_smoke_tasks.py runs the smoke tasks' starters and references). A task
whose requirements are unmet here joins the sub-run, which must skip it with exactly the reason
its requirements give on this machine (a missing GPU or package).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_mlab.data.requirements import unmet_requirement
from pytest_mlab.spec.project import Project
from pytest_mlab.trace import read_trace

REPO = Path(__file__).resolve().parents[2]
AGENTS = ("baseline", "reference")
# Tasks whose two default runs take seconds on mini data: tabular starters and graders (with the
# paper's pinned skeleton baselines among them), a text-regression starter, and the LLM-tool tasks'
# measure steps.
QUICK = ("bibtex-generation", "diabetes", "feedback", "house-price", "literature-review-tool",
         "spaceship-titanic")
SKIPPED = re.compile(r"^SKIPPED \[\d+\] specs/tasks/(?P<file>[\w.-]+)\.yaml: (?P<reason>.+)$")


def tasks() -> list:
    project = Project(REPO, REPO / "specs/actions", REPO / "agents", REPO / "specs/tasks")
    return [project.task_from_file(path) for path in sorted((REPO / "specs/tasks").glob("*.yaml"))]


def catalogue(cache: Path) -> dict[str, str | None]:
    """Task name -> why it cannot run here (None: it must run), from the specs themselves."""
    return {task.name: unmet_requirement(task, "mini", cache) for task in tasks()}


@pytest.mark.slow
def test_main_job_runs_the_quick_tasks_with_both_default_agents(pytester: pytest.Pytester, tmp_path):
    out, cache = tmp_path / "results", tmp_path / "cache"
    expected = {name: reason for name, reason in catalogue(cache).items() if name in QUICK or reason}
    assert set(QUICK) <= set(expected)
    runnable = sorted(name for name, reason in expected.items() if reason is None)
    assert {"diabetes", "house-price", "spaceship-titanic", "feedback"} <= set(runnable)
    result = pytester.runpytest_subprocess(
        *(str(REPO / "specs" / "tasks" / f"{name}.yaml") for name in sorted(expected)),
        "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), "-n", "2", "-rs",
        "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest",
        "--mlab-out", str(out), "--mlab-cache", str(cache), timeout=900)
    output = result.stdout.str()
    skips = {(match["file"], match["reason"]) for line in result.stdout.lines if (match := SKIPPED.match(line))}
    assert skips == {(name, reason) for name, reason in expected.items() if reason}, output
    result.assert_outcomes(passed=2 * len(runnable), skipped=2 * (len(expected) - len(runnable)))
    assert "created: 2/2 workers" in output
    assert output.count("pytest-mlab results") == 1  # printed once, by the controller
    assert f"results: {out / 'results.json'}" in output

    results = json.loads((out / "results.json").read_text())
    runs = {(run["task"], run["agent"]): run for run in results["runs"]}
    assert {(task, agent) for task in runnable for agent in AGENTS} == set(runs), output
    assert results["settings"]["variant"] == "mini"
    skeletons = {task.name for task in tasks() if "mini" in task.baseline_pinned}
    assert {"house-price", "spaceship-titanic"} <= skeletons  # the paper pins their baselines
    for task in runnable:
        baseline, reference = runs[(task, "baseline")], runs[(task, "reference")]
        assert baseline["passed"] and baseline["expect"] == "baseline", baseline["message"]
        # a skeleton starter writes no submission: its item checks it does not already succeed
        assert baseline["valid"] or task in skeletons, baseline["message"]
        assert not baseline["success"], baseline["message"]
        assert reference["success"] and reference["improvement"] > 0.10 and reference["passed"], reference["message"]
        assert reference["end_reason"] == "final answer" and reference["failure"] is None
        assert not (Path(reference["run_dir"]) / "timing.json").exists()
        trace = read_trace(Path(reference["trace"]))
        assert trace[0]["type"] == "run" and trace[-1]["type"] == "result"
        assert [r["action"] for r in trace if r["type"] == "step"][-2:] == ["Execute Script", "Final Answer"]
    csv_lines = (out / "results.csv").read_text().splitlines()
    assert csv_lines[0].startswith("nodeid,run_id,task,agent") and len(csv_lines) == 1 + 2 * len(runnable)

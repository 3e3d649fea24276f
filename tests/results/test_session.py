"""Real pytest sub-runs of the toy project: outputs, JUnit properties under xdist, the gate,
the budget, resume after a session killed with SIGKILL, and the report/rescore commands."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_mlab.cli import main
from pytest_mlab.trace import read_trace
from tests.helpers import UNRELATED_PLUGINS, copy_toy_project, output_of, read_results
from tests.results.builders import strict

pytestmark = pytest.mark.slow


def session(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--mlab-cache",
                                         str(pytester.path / ".cache"), *args, timeout=300)


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    return copy_toy_project(pytester.path)


def test_outputs_junit_properties_and_gate_under_xdist(pytester, project):
    result = session(pytester, "-n", "2", "--junitxml=junit.xml", "-o", "junit_logging=system-out",
                     "--mlab-score-steps", "--mlab-save-gate=gate/main.json")
    result.assert_outcomes(passed=2)
    out = project / "mlab-results"
    for name in ("results.json", "results.csv", "summary.csv", "report.html", "plots/success_rate.png",
                 "plots/improvement.png", "gate/main.json"):
        assert (project / name if name.startswith("gate") else out / name).is_file(), name
    assert not (out / "plots" / "efficiency.png").exists()  # no LLM ran: nothing to show, no empty plot
    environment = json.loads((out / "results.json").read_text())["settings"]["environment"]
    assert environment["cpus"] and environment["python"] and environment["commit"]  # the report's header
    text = output_of(result)
    assert "average success" in text and "report: " in text
    cases = {case.get("name"): case for case in ET.parse(project / "junit.xml").getroot().iter("testcase")}
    reference = cases["toy[mini-reference-s0]"]
    properties = {prop.get("name"): prop.get("value") for prop in reference.iter("property")}
    assert properties["mlab_score"] == "0.0" and properties["mlab_success"] == "True"
    assert properties["mlab_improvement"] == "1.0" and properties["mlab_best_improvement"] == "1.0"
    assert properties["mlab_tokens"] == "0" and properties["mlab_cost"] == "0.0"
    trace = properties["mlab_trace"]
    assert Path(trace).is_file() and f"[[ATTACHMENT|{trace}]]" in reference.find("system-out").text
    assert properties["mlab_failure"] == "null"  # every property on every run: a missing value is null
    row = strict(properties["mlab_result"])  # the whole row, as JSON
    assert row["run_id"] == "toy[mini-reference-s0]" and row["failure"] is None and row["improvement"] == 1.0
    baseline = {prop.get("name"): prop.get("value") for prop in cases["toy[mini-baseline-s0]"].iter("property")}
    assert baseline.keys() == properties.keys()
    steps = json.loads((Path(trace).parent / "step_scores.json").read_text())
    assert [point["step"] for point in steps["steps"]] == [1, 2, 3]
    assert steps["steps"][0]["improvement"] is None and steps["steps"][-1]["improvement"] == 1.0

    # the same session again passes its own gate; a reference it falls far short of fails it
    again = session(pytester, "--mlab-compare=gate/main.json")
    assert again.ret == 0 and "gate: passed" in output_of(again)
    (project / "strict.json").write_text(json.dumps({"kind": "mlab-gate", "version": 1, "groups": [
        {"task": "toy", "agent": "baseline", "llm": None, "variant": "mini", "successes": 30, "runs": 30}]}))
    failed = session(pytester, "--mlab-compare=strict.json", "--mlab-max-drop=0.5")
    failed.assert_outcomes(passed=2)  # every item passed, yet the session fails on the gate
    assert failed.ret == 1
    text = output_of(failed)
    assert "REGRESSED" in text and "30/30" in text and "0/1" in text and "-100%" in text


def test_bad_gate_and_budget_options_stop_the_session(pytester, project):
    missing = session(pytester, "--mlab-compare=nowhere.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "--mlab-compare=" in output_of(missing) and "no such file" in output_of(missing)
    bad = session(pytester, "--mlab-max-drop=2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "--mlab-max-drop=2: must be between 0 and 1" in output_of(bad)
    cost = session(pytester, "--mlab-max-cost=lots")
    assert cost.ret == pytest.ExitCode.USAGE_ERROR and "--mlab-max-cost=lots: expected a number" in output_of(cost)


def test_spent_budget_skips_unstarted_runs_with_the_reason(pytester, project):
    result = session(pytester, "-n", "2", "--mlab-max-cost=0", "-rs")
    result.assert_outcomes(skipped=2)
    assert "reached --mlab-max-cost=$0; not started" in output_of(result)
    assert result.ret == pytest.ExitCode.OK  # the budget is not an unmet requirement: the user chose it


SLEEPER = """
import os, time
from pytest_mlab.agents import Agent

class Sleeper(Agent):
    def run(self, env):
        env.step("Write File", {"file_name": "submission.txt", "content": "100"})
        while os.path.exists(os.environ["SLEEP_FLAG"]):
            time.sleep(0.2)
        env.step("Final Answer", {"final_answer": "done"})
"""


def test_resume_after_a_session_killed_mid_run(pytester, project, monkeypatch):
    (project / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (project / "sleeper.py").write_text(SLEEPER)
    (project / "agents" / "sleeper.yaml").write_text(
        "kind: Agent\nname: sleeper\nimplementation: sleeper:Sleeper\nactions: [Write File, Final Answer]\n")
    flag = project / "sleep.flag"
    flag.write_text("")
    args = ["specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--mlab-cache", str(project / ".cache"),
            "--agent=baseline,sleeper"]
    runs = project / "mlab-results" / "runs"
    baseline_trace = runs / "toy-mini-baseline-s0" / "trace.jsonl"
    sleeper_trace = runs / "toy-mini-sleeper-s0" / "trace.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=project, start_new_session=True,
                               env={**os.environ, "SLEEP_FLAG": str(flag)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until the sleeper has taken its first step; the baseline run is done by then
            if sleeper_trace.exists() and any(r.get("type") == "step" for r in read_trace(sleeper_trace)):
                break
            assert process.poll() is None, "the session ended before it could be killed"
            time.sleep(0.2)
        else:
            pytest.fail("the sleeper never started")
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert not (project / "mlab-results" / "results.json").exists()  # killed: nothing written at the end
    assert not any(r.get("type") == "result" for r in read_trace(sleeper_trace))
    finished = baseline_trace.read_bytes()

    flag.unlink()
    monkeypatch.setenv("SLEEP_FLAG", str(flag))
    result = session(pytester, "--agent=baseline,sleeper", "--mlab-resume")
    assert result.ret in (0, 1)
    saved = {run["agent"]: run for run in read_results(project)["runs"]}
    assert saved["baseline"]["resumed"] is True and saved["baseline"]["passed"] is True
    assert saved["baseline"]["score"] == 90.0
    assert baseline_trace.read_bytes() == finished  # not run again
    assert saved["sleeper"]["resumed"] is False and saved["sleeper"]["end_reason"] == "final answer"
    assert any(r.get("type") == "result" for r in read_trace(sleeper_trace))


def test_report_and_rescore_commands(pytester, project, capsys):
    session(pytester).assert_outcomes(passed=2)
    out = project / "mlab-results"
    (out / "report.html").unlink()
    for png in (out / "plots").iterdir():
        png.unlink()
    assert main(["report", str(out)]) == 0
    assert (out / "report.html").is_file() and len(list((out / "plots").iterdir())) == 2
    grader = project / "task_assets" / "toy" / "grader.py"
    grader.write_text(grader.read_text().replace("return abs(", "return 2 * abs("))  # a "grader fix"
    assert main(["rescore", str(out), "--root", str(project), "--cache", str(project / ".cache")]) == 0
    assert "1 changed" in capsys.readouterr().out
    saved = {run["agent"]: run for run in read_results(project)["runs"]}
    assert saved["baseline"]["score"] == 180.0 and saved["baseline"]["passed"] is False
    assert saved["reference"]["score"] == 0.0 and saved["reference"]["passed"] is True
    assert main(["report", str(project / "nowhere")]) == 2
    assert "no results.json here" in capsys.readouterr().err


def test_a_follow_up_session_keeps_the_rows_of_the_first(pytester, project):
    session(pytester, "--agent=baseline,reference", "--seeds=2").assert_outcomes(passed=4)
    follow_up = session(pytester, "--agent=baseline", "--max-steps=1", "-k", "s0")
    follow_up.assert_outcomes(passed=1)
    assert "(3 row(s) of earlier sessions kept)" in output_of(follow_up)
    payload = strict((project / "mlab-results" / "results.json").read_text())
    rows = {row["run_id"]: row for row in payload["runs"]}
    assert sorted(rows) == ["toy[mini-baseline-s0]", "toy[mini-baseline-s1]", "toy[mini-reference-s0]",
                            "toy[mini-reference-s1]"]
    assert rows["toy[mini-baseline-s0]"]["end_reason"] == "step limit"  # the follow-up's run replaced its row
    assert rows["toy[mini-baseline-s1]"]["end_reason"] == "final answer"
    assert [group["runs"] for group in payload["aggregate"]["groups"]] == [2, 2]
    assert payload["settings"]["max_steps"] == 1  # the settings are the last session's
    report = (project / "mlab-results" / "report.html").read_text()
    assert report.count("toy[mini-reference-s1]") >= 1


def test_report_rebuilds_one_table_from_the_run_folders_of_two_sessions(pytester, project, capsys):
    session(pytester, "--agent=baseline,reference", "--mlab-out=first").assert_outcomes(passed=2)
    session(pytester, "--agent=baseline", "--max-steps=1", "--mlab-out=second").assert_outcomes(passed=1)
    for folder in ("first", "second"):
        (project / folder / "results.json").unlink()  # the run folders alone

    assert main(["report", str(project / "first"), str(project / "second"), "--out", str(project / "all")]) == 0

    assert "2 run(s)" in capsys.readouterr().out
    rows = {row["agent"]: row for row in read_results(project, "all")["runs"]}
    assert sorted(rows) == ["baseline", "reference"]
    assert rows["baseline"]["end_reason"] == "step limit"  # the newer session's run of the same item
    assert Path(rows["baseline"]["run_dir"]) == project / "second" / "runs" / "toy-mini-baseline-s0"
    assert rows["reference"]["passed"] and Path(rows["reference"]["trace"]).is_file()
    assert (project / "all" / "report.html").is_file() and (project / "all" / "results.csv").is_file()

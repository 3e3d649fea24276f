"""Results that no pytest report brought (Ctrl-C, a dead worker) are read back from this session's
traces: the runner names the session in each trace, and the controller takes its own runs only."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_mlab.agents import Agent
from pytest_mlab.llm import LLMError
from pytest_mlab.plugin.reporter import ResultsReporter
from pytest_mlab.results.record import RESULT_PROPERTY, RunIdentity, RunResult
from pytest_mlab.plugin.state import WORKER_INPUT, session_id
from pytest_mlab.results.recover import recovered_results
from pytest_mlab.results.resume import finished_result
from pytest_mlab.results.signing import results_key
from pytest_mlab.runner import execute
from pytest_mlab.spec.plan import Settings, compile_plans
from pytest_mlab.spec.project import Project
from pytest_mlab.trace import read_trace
from tests.helpers import ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT
from tests.results.builders import SESSION, run, write_trace

def test_workers_take_the_controllers_session_id_and_each_controller_makes_its_own():
    assert session_id({WORKER_INPUT: "abc", "workerid": "gw0"}) == "abc"
    first, second = session_id(None), session_id({"workerid": "gw0"})  # alone; xdist without pytest-mlab's input
    assert first != second and len(first) == 32


@pytest.mark.parametrize("interrupted, end_reason", [(True, "interrupted"), (False, "crashed")])
def test_this_sessions_runs_come_back_graded_or_as_stopped_before_grading(tmp_path, interrupted, end_reason):
    graded = run(agent="reference")
    write_trace(tmp_path, graded)
    write_trace(tmp_path, run(agent="baseline"), session="an-earlier-session")
    write_trace(tmp_path, run(agent="old"), session=None)  # written before traces named their session
    stopped = write_trace(tmp_path, run(agent="sleeper"), graded=False)
    cut = write_trace(tmp_path, run(agent="grading"), graded=False,
                      tail=b'{"type": "result", "session": "this-session", "sco')  # killed mid-write
    (tmp_path / "runs" / "never-started").mkdir()
    (tmp_path / "runs" / "never-started" / "trace.jsonl").write_bytes(b"")

    done, unfinished = recovered_results(tmp_path, SESSION, interrupted=interrupted)

    assert done == [graded]
    assert sorted(row.agent for row in unfinished) == ["grading", "sleeper"]
    row = next(row for row in unfinished if row.agent == "sleeper")
    assert (row.nodeid, row.run_id, row.seed, row.sandbox) == (graded.nodeid.replace("reference", "sleeper"),
                                                               "digits[mini-sleeper-s0]", 0, "bwrap")
    assert row.end_reason == row.failure == end_reason and row.infrastructure and not row.passed
    assert row.score is None and row.wall_time == 7.5 and row.trace == str(stopped)
    assert row.steps == 1  # counted from the trace, not left at 0
    assert "--mlab-resume runs it again" in row.message
    assert recovered_results(tmp_path / "nowhere", SESSION, interrupted=True) == ([], [])


def test_a_result_record_without_the_harness_signature_is_not_taken_as_graded(tmp_path):
    forged = write_trace(tmp_path, run(agent="forger"), graded=False)
    with open(forged, "a") as handle:
        handle.write(json.dumps({"type": "result", "session": SESSION, **run(agent="forger").to_dict()}) + "\n")
    done, unfinished = recovered_results(tmp_path, SESSION, interrupted=False)
    assert done == [] and [row.agent for row in unfinished] == ["forger"] and not unfinished[0].passed


def report(result=None, *, nodeid: str | None = None, crash: str | None = None) -> SimpleNamespace:
    """What pytest hands the controller: a run's result on the report, or xdist's report of a dead worker."""
    properties = [(RESULT_PROPERTY, json.dumps(result.to_dict()))] if result is not None else []
    return SimpleNamespace(nodeid=nodeid or result.nodeid, user_properties=properties, failed=crash is not None,
                           skipped=False, when="call", longrepr=crash, duration=1.0)


def finish(reporter: ResultsReporter, exitstatus: pytest.ExitCode) -> dict[str, dict]:
    """Drive the reporter's sessionfinish wrapper as pluggy does; the runs of the written results.json."""
    hook = reporter.pytest_sessionfinish(SimpleNamespace(exitstatus=exitstatus))
    next(hook)
    with pytest.raises(StopIteration):
        hook.send(None)
    return {row["agent"]: row for row in json.loads((reporter.settings.out_dir / "results.json").read_text())["runs"]}


def test_the_controller_adds_what_reports_lost_and_trusts_a_graded_trace_over_a_dead_workers_report(tmp_path):
    out = tmp_path / "out"
    settings = Settings(agents=("reported", "lost", "killed", "graded", "sleeper"), agents_source="--agent",
                        llm=None, seeds=1, variant="mini", sandbox="local", out_dir=out, cache_dir=tmp_path / "cache")
    project = Project(TOY_PROJECT, ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT / "specs" / "tasks")
    reporter = ResultsReporter(settings, lambda: project, SESSION)
    reported, lost, killed, graded = (run(agent=name) for name in ("reported", "lost", "killed", "graded"))
    write_trace(out, reported)
    write_trace(out, lost)  # graded, but its report never reached the controller (Ctrl-C)
    write_trace(out, killed, graded=False)  # its worker was killed mid-run
    write_trace(out, graded)  # its worker died after grading it, before reporting it
    write_trace(out, run(agent="sleeper"), graded=False)  # the session stopped while it ran
    write_trace(out, run(agent="elsewhere"), session="another-session")
    reporter.pytest_runtest_logreport(report(replace(reported, message="as reported")))
    for dead in (killed, graded):
        reporter.pytest_runtest_logreport(report(nodeid=dead.nodeid, crash=f"worker 'gw0' crashed while running "
                                                                          f"'{dead.nodeid}'"))

    rows = finish(reporter, pytest.ExitCode.INTERRUPTED)

    assert sorted(rows) == ["graded", "killed", "lost", "reported", "sleeper"]
    assert rows["reported"]["message"] == "as reported"  # a report wins over the same result on disk
    assert rows["lost"]["end_reason"] == "final answer" and rows["lost"]["passed"]
    assert rows["graded"]["end_reason"] == "final answer" and not rows["graded"]["infrastructure"]
    assert rows["killed"]["end_reason"] == "crashed" and rows["killed"]["infrastructure"]
    assert "crashed while running" in rows["killed"]["message"]
    assert rows["sleeper"]["end_reason"] == "interrupted" and rows["sleeper"]["infrastructure"]
    assert rows["killed"]["steps"] == rows["sleeper"]["steps"] == 1  # from their traces


class ProviderDown(Agent):
    """The LLM provider failed for good: the harness's failure, not the agent's."""

    def run(self, env):
        env.step("Write File", {"file_name": "submission.txt", "content": "100"})
        raise LLMError("the provider returned 503 after every retry")


@pytest.fixture
def plans(tmp_path):
    """Run plans of the toy task for the reference agent and for ProviderDown, on the local sandbox."""
    project = Project(TOY_PROJECT, ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT / "specs" / "tasks")
    task = project.task_from_file(TOY_PROJECT / "specs" / "tasks" / "toy.yaml")
    reference = project.agent("reference")
    down = replace(reference, name="down", implementation=f"{__name__}:ProviderDown", expect="success")
    settings = Settings(agents=(), agents_source="--agent", llm=None, seeds=1, variant="mini", sandbox="local",
                        out_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    agents = [(agent, project.agent_actions(reference)) for agent in (reference, down)]
    return {plan.agent.name: plan for plan in compile_plans(task, agents, settings)}


def test_the_runner_names_the_session_and_records_a_harness_failure(plans, tmp_path):
    finished = execute(plans["reference"], "toy.yaml::toy[mini-reference-s0]", session=SESSION)
    failed = execute(plans["down"], "toy.yaml::toy[mini-down-s0]", session=SESSION)

    records = read_trace(finished.trace)
    assert records[0]["type"] == "run" and records[0]["session"] == SESSION
    assert records[-1]["type"] == "result" and records[-1]["session"] == SESSION
    assert recovered_results(tmp_path / "out", SESSION, interrupted=False)[0] == [failed, finished]  # by folder
    assert not finished.infrastructure and finished.end_reason == "final answer"
    assert failed.infrastructure and failed.end_reason == "crashed" and "LLMError" in failed.message
    # --mlab-resume keeps the graded run and runs the one the provider broke again
    key = results_key(tmp_path / "out")
    assert finished_result(Path(finished.run_dir), finished.run_id, "n", key).resumed
    assert finished_result(Path(failed.run_dir), failed.run_id, "n", key) is None
    identity = RunIdentity.of_plan(plans["reference"], "n", "local")
    assert RunResult.crashed(identity, "the sandbox could not start").infrastructure

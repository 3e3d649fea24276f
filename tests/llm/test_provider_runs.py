"""Real pytest sub-runs whose agent calls a fake OpenAI-compatible server through litellm: a failing
provider ends the run as an infrastructure failure, and the budget holds under xdist."""

from __future__ import annotations

import json

import pytest

from pytest_mlab.results.budget import Ledger
from tests.llm.fake_provider import Reply, refused_base
from tests.llm.support import SUBMIT, WRITE_ANSWER, llm_project, llm_records, only_run, run_project


@pytest.mark.slow
def test_a_failing_provider_ends_the_run_as_a_provider_error(pytester, server):
    project = llm_project(pytester.path, options={"llm_attempts": 2,
                                                  "sampling": {"main": {"temperature": 0.2, "timeout": 0.5}}})
    server.queue(Reply.stalled(30))
    server.default = Reply.error(503, "overloaded")
    result, results = run_project(pytester, project, "--llm=openai/fake-model")
    result.assert_outcomes(failed=1)
    run = only_run(results)
    assert run["end_reason"] == "provider error" and run["infrastructure"] is True
    assert "ProviderError" in run["message"] and "failed 2 times in a row" in run["message"]
    (record,) = llm_records(run["trace"])
    assert server.count == record["attempts"] == 2
    assert [e["error"] for e in record["errors"]] == ["Timeout", "ServiceUnavailableError"]
    assert (record["temperature"], record["max_tokens"], record["timeout"]) == (0.2, 2000, 0.5)
    assert server.requests[0]["temperature"] == 0.2 and server.requests[0]["max_tokens"] == 2000


@pytest.mark.slow
def test_the_budget_holds_within_one_call_under_two_workers(pytester, server):
    project = llm_project(pytester.path)
    # gpt-3.5-turbo-0125 at litellm's prices: 1000 prompt + 500 completion tokens = $0.00125 a call
    server.default = Reply.answer(json.dumps(WRITE_ANSWER), model="gpt-3.5-turbo-0125", prompt_tokens=1000,
                                  completion_tokens=500)
    one_call, limit = 0.00125, 0.01
    result, results = run_project(pytester, project, "--llm=openai/gpt-3.5-turbo", "--seeds=4", "--max-steps=50",
                                  f"--mlab-max-cost={limit}", "-p", "xdist", "-n", "2", "-rs")
    runs = results["runs"]
    assert runs and all(run["end_reason"] == "budget spent" and run["infrastructure"] for run in runs), runs
    outcomes = result.parseoutcomes()
    assert len(runs) + outcomes.get("skipped", 0) == 4
    if outcomes.get("skipped"):
        result.stdout.fnmatch_lines(["*budget: this session's LLM cost * reached --mlab-max-cost=$0.01; not started*"])
    spent = Ledger(project / "mlab-results").spent()
    assert sum(run["cost"] for run in runs) == pytest.approx(spent)
    assert limit <= spent < limit + one_call + 1e-9
    attempts = sum(record["attempts"] for run in runs for record in llm_records(run["trace"]))
    assert server.count == attempts == round(spent / one_call)


@pytest.mark.slow
def test_a_provider_that_hangs_until_max_time_ends_the_run_as_a_timeout(pytester, server):
    """The second call hangs: its one attempt waits only as long as the run has left (not the role's
    300 s), no retry follows, and the run ends as the time limit it is, graded, not as a provider
    error that --mlab-resume would run again."""
    project = llm_project(pytester.path, options={"llm_attempts": 5})
    server.queue(Reply.answer(json.dumps(WRITE_ANSWER)))
    server.default = Reply.stalled(120)
    result, results = run_project(pytester, project, "--llm=openai/fake-model", "--max-time=8s")
    run = only_run(results)
    assert run["end_reason"] == "timeout" and run["infrastructure"] is False, run
    assert run["valid"] is True  # the workspace was graded
    first, hung = llm_records(run["trace"])
    assert server.count == first["attempts"] + hung["attempts"] == 2
    assert (hung["failure"], hung["completion"], hung["timeout"]) == ("time limit", None, 300.0)
    (error,) = hung["errors"]
    assert error["error"] == "Timeout" and 0 < error["timeout"] < 8
    assert hung["message"].startswith("the run's max_time ran out while waiting for openai/fake-model: 1 attempt")


@pytest.mark.slow
def test_an_agent_spec_sends_its_model_to_its_own_server(pytester, server, monkeypatch):
    """`options: api_base:` in the agent spec, end to end: the run's every call reaches the server the
    spec names; litellm's default base is a loopback port where nothing listens."""
    monkeypatch.setenv("OPENAI_API_BASE", refused_base())
    project = llm_project(pytester.path, options={"api_base": {"openai/fake-model": server.api_base}})
    server.queue(Reply.answer(json.dumps(WRITE_ANSWER)), Reply.answer(json.dumps(SUBMIT)))
    result, results = run_project(pytester, project, "--llm=openai/fake-model")
    run = only_run(results)
    assert run["end_reason"] == "final answer" and run["passed"] is True, run
    assert server.paths == ["/v1/chat/completions"] * 2
    assert [request["model"] for request in server.requests] == ["fake-model"] * 2
    records = llm_records(run["trace"])
    assert [request["messages"] for request in server.requests] == [
        [{"role": "user", "content": record["prompt"]}] for record in records]

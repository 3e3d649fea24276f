"""The research agent in real pytest sub-runs against a fake OpenAI-compatible server, through the
real litellm path: faults mid-run are counted as attempts, tool errors are observations the run
survives, and a prompt too long for the main model ends the run as a token limit."""

from __future__ import annotations

import pytest

from pytest_mlab.trace import read_trace
from tests.helpers import copy_toy_project
from tests.llm.fake_provider import CONTEXT_LENGTH_BODY, Reply
from tests.llm.support import llm_records, only_run, run_project, steps

LOG_ENTRY = "[Reasoning]: looked\n[Action]: acted\n[Observation]: seen"


def research_response(action: str, action_input: str) -> str:
    return (f"Reflection: none yet\nResearch Plan and Status: 1. look **started**\nFact Check: nothing\n"
            f"Thought: go on\nAction: {action}\nAction Input: {action_input}\n")


def research_project(root):
    copy_toy_project(root)
    (root / "agents" / "fast-research.yaml").write_text(
        "kind: Agent\nname: fast-research\nextends: research\n"
        "options: {llm_attempts: 3, sampling: {main: {timeout: 2}, fast: {timeout: 2}}}\n")
    return root


def run_research(pytester, server):
    result, results = run_project(pytester, research_project(pytester.path), "--agent=fast-research",
                                  "--llm=openai/fake-model")
    run = only_run(results)
    records = llm_records(run["trace"])
    assert server.count == sum(record["attempts"] for record in records)  # no request the trace does not show
    return run, records


@pytest.mark.slow
def test_faults_mid_run_are_attempts_and_tool_errors_observations(pytester, server):
    server.queue(
        Reply.error(429, "slow down", headers={"Retry-After": "0"}),  # step 1 (main): rate limited once
        Reply.answer(research_response("Understand File",
                                       '{"file_name": "train.py", "things_to_look_for": "the metric"}')),
        Reply.error(400, body=CONTEXT_LENGTH_BODY),  # Understand File's fast call: too long
        Reply.error(503, "overloaded"), Reply.answer(LOG_ENTRY),  # the research-log entry: one 5xx
        Reply.answer(""),  # step 2 (main): an empty completion is an unusable response...
        Reply.malformed(), Reply.answer(research_response("Final Answer", '{"final_answer": "done"}')),  # ...asked again
    )
    run, records = run_research(pytester, server)
    assert run["end_reason"] == "final answer" and run["infrastructure"] is False
    taken = steps(run["trace"])
    assert [name for name, _ in taken] == ["Understand File", "Append Summary to Research Log", "Final Answer"]
    understand = next(r for r in read_trace(run["trace"]) if r.get("type") == "step" and r["action"] == "Understand File")
    assert understand["observation"].startswith("EnvError: too long input for the tool") and understand["error"]
    assert [(r["role"], r["attempts"], r.get("failure")) for r in records] == [
        ("main", 2, None), ("fast", 1, "token limit"), ("fast", 2, None), ("main", 1, None), ("main", 2, None)]
    assert [e["error"] for e in records[0]["errors"]] == ["RateLimitError"]
    assert records[3]["completion"] == "" and records[3]["purpose"] == "agent step"
    assert records[4]["purpose"] == "agent step, retry 1"
    assert all(r["temperature"] == (0.01 if r["role"] == "fast" else 0.5) for r in records)


@pytest.mark.slow
def test_a_prompt_too_long_for_the_main_model_ends_the_run_as_a_token_limit(pytester, server):
    server.queue(Reply.error(400, body=CONTEXT_LENGTH_BODY))
    run, records = run_research(pytester, server)
    assert run["end_reason"] == "token limit" and run["failure"] == "invalid submission"  # nothing was written
    assert "the run ended by token limit" in run["message"]
    assert run["infrastructure"] is False and len(records) == 1 and records[0]["attempts"] == 1
    assert records[0]["failure"] == "token limit"

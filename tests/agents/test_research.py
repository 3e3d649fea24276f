"""The research agent: full response format, research log after each step, retrieval of older steps."""

from __future__ import annotations

from pytest_mlab.agents.research import ResearchAgent
from pytest_mlab.trace import read_trace
from tests.agents.fakes import FakeLLM, agent_actions, agent_plan, environment, response

FILES = {"train.py": "print('accuracy 0.5')\n"}


def look(n: int) -> str:
    return response("List Files", '{"dir_path": "."}', thought=f"look {n}")


FINAL = response("Final Answer", '{"final_answer": "done"}')


def steps(tmp_path):
    return [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"]


def test_log_after_each_step_and_retrieval_once_steps_leave_the_context(tmp_path):
    script = [look(1), ("fast", "[Action] listed 1"), look(2), ("fast", "[Action] listed 2"),
              look(3), ("fast", "[Action] listed 3"), look(4), ("fast", "[Action] listed 4"),
              ("fast", "RETRIEVED: step 1 listed files"), FINAL]
    llm = FakeLLM(list(script))
    env = environment(tmp_path, agent_actions("research"), llm, files=FILES)
    ResearchAgent(agent_plan("research"), env.llm).run(env)
    assert llm.roles() == ["main", "fast"] * 4 + ["fast", "main"]
    first = llm.calls[0].prompt
    for entry in ("Reflection:", "Research Plan and Status:", "Fact Check:", "Thought:", "Action:", "Action Input:"):
        assert entry in first.split("Respond in exactly this format")[1]
    assert "Measure the baseline" in first
    assert "Append Summary to Research Log" not in first  # bookkeeping, not a tool for the model
    assert "- Reflection:" in first
    assert [s["action"] for s in steps(tmp_path)] == ["List Files", "Append Summary to Research Log"] * 4 + ["Final Answer"]
    log = (tmp_path / "ws/research_log.log").read_text()
    assert log.startswith("Step 1:\n[Action] listed 1\n") and "Step 4:\n[Action] listed 4" in log
    retrieval = llm.calls[8]
    assert retrieval.purpose == "retrieve from research log" and "Step 1:\n[Action] listed 1" in retrieval.prompt
    assert "1. inspect **done**" in retrieval.prompt  # the current plan
    last = llm.calls[9].prompt
    assert "RETRIEVED: step 1 listed files" in last and "look 1" not in last and "look 2" in last
    assert "look 1" in llm.calls[1].prompt and "train.py" in llm.calls[1].prompt  # step 1 and its observation


def test_no_retrieval_variant_calls_only_the_main_model(tmp_path):
    llm = FakeLLM([look(n) for n in range(5)] + [FINAL])
    env = environment(tmp_path, agent_actions("research-no-retrieval"), llm, files=FILES)
    ResearchAgent(agent_plan("research-no-retrieval"), env.llm).run(env)
    assert set(llm.roles()) == {"main"} and len(llm.calls) == 6
    assert not (tmp_path / "ws/research_log.log").exists()
    assert "Reflection" not in [s["action"] for s in steps(tmp_path)]
    assert "A summary of your earlier steps" not in llm.calls[-1].prompt


def test_retrieval_needs_the_append_action():
    import dataclasses

    import pytest

    from pytest_mlab.errors import SpecError

    agent = agent_plan("research").agent
    agent = dataclasses.replace(agent, actions=tuple(a for a in agent.actions if "Append" not in a))
    with pytest.raises(SpecError, match="Append Summary to Research Log"):
        ResearchAgent.check_spec(agent)

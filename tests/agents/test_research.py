"""The research agent as the original runs it: full format and instructions, research log after
each step, retrieval as a step of its own, re-asks with accumulating notes, tool errors survived."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_mlab.agents.research import ResearchAgent
from pytest_mlab.errors import SpecError
from pytest_mlab.llm.base import LLMError, ProviderError, TimeLimitReached, TokenLimitExceeded
from pytest_mlab.spec.models import Limits
from pytest_mlab.trace import read_trace
from tests.agents.fakes import FakeLLM, agent_actions, agent_plan, environment, response

FILES = {"train.py": "print('accuracy 0.5')\n"}
FINAL = response("Final Answer", '{"final_answer": "done"}')


def look(n: int) -> str:
    return response("List Files", '{"dir_path": "."}', thought=f"look {n}")


def entry(n: int) -> tuple[str, str]:
    return ("fast", f"[Reasoning]: look {n}\n[Action]: listed\n[Observation]: train.py")


def run(tmp_path, script, agent="research", files=FILES, **kwargs):
    llm = FakeLLM(list(script))
    env = environment(tmp_path, agent_actions(agent), llm, files=files, **kwargs)
    ResearchAgent(agent_plan(agent), env.llm).run(env)
    return env, llm, [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"]


def test_prompt_carries_the_original_instructions_and_format(tmp_path):
    _, llm, _ = run(tmp_path, [FINAL])
    prompt = llm.calls[0].prompt
    fmt = prompt.split("exactly this format")[1]
    for name in ("Reflection:", "Research Plan and Status:", "Fact Check:", "Thought:", "Action:", "Action Input:"):
        assert name in fmt
    for fact in ("know nothing about this problem", "high-level plan", "baseline performance",
                 "as directly as you can", "supporting experimental results", "install any new packages",
                 "submit only once", "double asterisks", "repeat the previous Research Plan and Status",
                 "previous high-level plan in full", "guessed or directly confirmed"):
        assert fact in prompt, fact
    assert "Change one thing at a time" not in prompt  # research-strict's, not the original's
    assert "- Reflection:" in prompt and "- Append Summary to Research Log" not in prompt
    assert "- Retrieval from Research Log" not in prompt


def test_log_after_each_step_and_retrieval_as_a_step_once_steps_leave_the_context(tmp_path):
    script = [look(0), entry(0), look(1), entry(1), look(2), entry(2), look(3), entry(3),
              ("fast", "RETRIEVED: the workspace holds train.py"), FINAL]
    env, llm, steps = run(tmp_path, script)
    assert llm.roles() == ["main", "fast"] * 4 + ["fast", "main"]
    assert [s["action"] for s in steps] == (["List Files", "Append Summary to Research Log"] * 4
                                            + ["Retrieval from Research Log", "Final Answer"])
    assert steps[8]["arguments"] == {"current_plan": ""}  # the original retrieves with an empty plan
    assert env.steps == 10  # both bookkeeping actions count against the step limit
    log = (tmp_path / "ws/research_log.log").read_text()
    assert "Step 0:\n[Reasoning]: look 0" in log and "Step 3:\n[Reasoning]: look 3" in log
    retrieval = llm.calls[8]
    assert "Step 0:\n[Reasoning]: look 0" in retrieval.prompt and "test problem" in retrieval.prompt
    last = llm.calls[9].prompt
    assert "RETRIEVED: the workspace holds train.py" in last
    assert "look 0" not in last.split("RETRIEVED")[1] and "look 1" in last and "look 3" in last


def test_history_shows_the_plan_without_new_marks(tmp_path):
    _, llm, _ = run(tmp_path, [look(0), entry(0), FINAL])
    assert "1. inspect done" in llm.calls[2].prompt and "1. inspect **done**" not in llm.calls[2].prompt


def test_retrieval_taking_the_last_step_ends_the_run_before_another_call(tmp_path):
    script = [look(0), entry(0), look(1), entry(1), look(2), entry(2), look(3), entry(3), ("fast", "summary")]
    env, llm, steps = run(tmp_path, script, limits=Limits(max_steps=9))
    assert env.end_reason == "step limit" and steps[-1]["action"] == "Retrieval from Research Log"
    assert len(llm.calls) == 9


def test_no_retrieval_variant_calls_only_the_main_model(tmp_path):
    env, llm, steps = run(tmp_path, [look(n) for n in range(5)] + [FINAL], agent="research-no-retrieval")
    assert set(llm.roles()) == {"main"} and len(llm.calls) == 6
    assert not (tmp_path / "ws/research_log.log").exists()
    assert "- Reflection:" not in llm.calls[0].prompt  # left out of the prompt, as in the original
    assert "summary of the relevant actions" not in llm.calls[-1].prompt


def test_unusable_responses_are_asked_again_with_notes_that_accumulate(tmp_path):
    bad = ["I will list the files.", response("Delete Everything", "{}")]
    env, llm, steps = run(tmp_path, [*bad, FINAL])
    note = "Your response did not follow the required format"
    assert note not in llm.calls[0].prompt
    assert llm.calls[1].prompt.count(note) == 1 and llm.calls[2].prompt.count(note) == 2
    assert llm.calls[2].prompt.startswith(llm.calls[1].prompt)
    assert "Reflection, Research Plan and Status, Fact Check, Thought, Action, Action Input" in llm.calls[1].prompt
    assert "Delete Everything" not in llm.calls[2].prompt  # the original's note does not say what was wrong
    assert [s["action"] for s in steps] == ["Final Answer"]


def test_the_strict_variant_says_what_was_wrong(tmp_path):
    _, llm, _ = run(tmp_path, [response("Delete Everything", "{}"), FINAL], agent="research-strict")
    assert "Delete Everything" in llm.calls[1].prompt and "Change one thing at a time" in llm.calls[0].prompt


def test_five_unusable_responses_in_a_row_end_the_run_with_its_own_category(tmp_path):
    env, llm, steps = run(tmp_path, ["no format here"] * 5)
    assert len(llm.calls) == 5 and steps == [] and env.end_reason == "invalid responses"


def test_an_empty_fact_check_is_a_usable_response(tmp_path):
    empty = FINAL.replace("Fact Check: none", "Fact Check:")
    _, llm, steps = run(tmp_path, [empty])
    assert len(llm.calls) == 1 and steps[0]["action"] == "Final Answer"


@pytest.mark.parametrize("failure, observation", [
    (TokenLimitExceeded("the file is too long"), "EnvError: too long input for the tool"),
    (LLMError("the model refused"), "LLMError: the model refused")])
def test_a_tool_error_mid_run_is_an_observation_and_the_run_goes_on(tmp_path, failure, observation):
    understand = response("Understand File", '{"file_name": "train.py", "things_to_look_for": "the metric"}')
    env, llm, steps = run(tmp_path, [understand, ("fast", failure), entry(0), FINAL])
    assert steps[0]["observation"].startswith(observation) and steps[0]["error"]
    assert [s["action"] for s in steps] == ["Understand File", "Append Summary to Research Log", "Final Answer"]
    assert env.end_reason == "final answer" and observation in llm.calls[-1].prompt


def test_a_provider_failure_mid_run_ends_it(tmp_path):
    understand = response("Understand File", '{"file_name": "train.py", "things_to_look_for": "the metric"}')
    with pytest.raises(ProviderError):
        run(tmp_path, [understand, ("fast", ProviderError("429 five times"))])


@pytest.mark.parametrize("summarize_over", [0, 10])
def test_the_runs_deadline_met_by_a_summary_or_log_entry_ends_the_run_at_once(tmp_path, summarize_over):
    """Past the run's max_time no request is sent: asking again for the log entry (or falling back
    to the observation's start) would only add empty records before the run ends as its time limit."""
    over = TimeLimitReached("the run's max_time had passed before gpt-4 was asked")
    script = [look(0), ("fast", over), ("fast", "[Reasoning]: never asked"), FINAL]
    llm = FakeLLM(list(script))
    env = environment(tmp_path, agent_actions("research"), llm, files=FILES)
    agent = ResearchAgent(agent_plan("research", summarize_over=summarize_over), env.llm)
    with pytest.raises(TimeLimitReached):
        agent.run(env)
    assert [call.role for call in llm.calls] == ["main", "fast"]


def test_the_runs_deadline_met_inside_an_action_ends_the_run_as_its_time_limit(tmp_path):
    """Understand File's call meets the deadline: the step is recorded and the run ends as a
    time-out, not as an LLMError observation the agent would act on with no time left."""
    understand = response("Understand File", '{"file_name": "train.py", "things_to_look_for": "the metric"}')
    over = TimeLimitReached("the run's max_time leaves 2.0s, too little to wait 4s and ask gpt-4 again")
    llm = FakeLLM([understand, ("fast", over), FINAL])
    env = environment(tmp_path, agent_actions("research"), llm, files=FILES)
    with pytest.raises(TimeLimitReached):
        ResearchAgent(agent_plan("research"), env.llm).run(env)
    (step,) = [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"]
    assert (step["action"], step["ended"]) == ("Understand File", "timeout")
    assert step["observation"].startswith("TimeLimitReached: the run's max_time leaves 2.0s")


def test_a_log_entry_is_asked_again_until_it_has_its_labels_then_given_up(tmp_path):
    script = [look(0), ("fast", "no labels"), ("fast", LLMError("refused")), ("fast", "x [Reasoning]: ok"), FINAL]
    _, llm, _ = run(tmp_path, script)
    assert (tmp_path / "ws/research_log.log").read_text().strip() == "Step 0:\n[Reasoning]: ok"
    tmp = tmp_path / "second"
    tmp.mkdir()
    _, llm, _ = run(tmp, [look(0)] + [("fast", "no labels")] * 5 + [FINAL])
    assert (tmp / "ws/research_log.log").read_text().strip() == "Step 0:\nToo long to summarize."


def test_retrieval_needs_both_research_log_actions():
    agent = agent_plan("research").agent
    agent = dataclasses.replace(agent, accepts=tuple(a for a in agent.accepts if a != "Retrieval from Research Log"))
    with pytest.raises(SpecError, match="Retrieval from Research Log"):
        ResearchAgent.check_spec(agent)

"""The shared LLM loop (react, simple) against a real Environment, driven by a fake LLM."""

from __future__ import annotations

import pytest

from pytest_mlab.agents.llm_agent import LLMAgent
from pytest_mlab.errors import SpecError
from pytest_mlab.llm.base import LLMError
from pytest_mlab.trace import read_trace
from pytest_mlab.spec.project import Project
from tests.agents.fakes import FakeLLM, agent_actions, agent_plan, environment, response
from tests.helpers import ACTIONS_DIR, AGENTS_DIR

FILES = {"train.py": "print('accuracy 0.5')\n"}
LIST = response("List Files", '{"dir_path": "."}', full=False)
FINAL = response("Final Answer", '{"final_answer": "done"}', full=False)


def run(tmp_path, agent, responses, **options):
    llm = FakeLLM(list(responses))
    env = environment(tmp_path, agent_actions(agent), llm, files=FILES)
    LLMAgent(agent_plan(agent, **options), env.llm).run(env)
    return env, llm, [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"]


def test_prompt_has_tools_problem_format_and_stop_sequence(tmp_path):
    env, llm, steps = run(tmp_path, "react", [LIST, FINAL])
    prompt = llm.calls[0].prompt
    assert "- Execute Script: Run a Python script" in prompt
    assert 'Action: Edit Script (AI)\n  Action Input: {\n      "script_name": "[string:' in prompt
    assert "Observation: The unified diff" in prompt
    assert "test problem" in prompt
    assert "Thought: what you will do now" in prompt and "Research Plan and Status" not in prompt
    assert llm.calls[0].stop == ("Observation:",)
    assert [s["action"] for s in steps] == ["List Files", "Final Answer"]
    assert env.end_reason == "final answer"
    assert "Step 1:\nThought: next step\nAction: List Files" in llm.calls[1].prompt
    assert "train.py" in llm.calls[1].prompt  # the observation of step 1


def test_only_the_last_steps_are_in_context(tmp_path):
    thoughts = [response("List Files", '{"dir_path": "."}', thought=f"look {n}", full=False) for n in range(5)]
    _, llm, _ = run(tmp_path, "react", [*thoughts, FINAL], steps_in_context=3)
    last = llm.calls[-1].prompt
    assert "look 4" in last and "look 2" in last and "look 1" not in last and "look 0" not in last


def test_text_after_the_stop_sequence_is_ignored(tmp_path):
    invented = LIST + "Observation: an invented observation\nThought: more\nAction: Final Answer\n"
    _, llm, steps = run(tmp_path, "react", [invented, FINAL])
    assert [s["action"] for s in steps] == ["List Files", "Final Answer"]
    assert "invented" not in llm.calls[1].prompt


def test_simple_agent_needs_only_action_and_input(tmp_path):
    bare = 'Action: List Files\nAction Input: {"dir_path": "."}'
    _, llm, steps = run(tmp_path, "simple", [bare, 'Action: Final Answer\nAction Input: {"final_answer": "x"}'])
    assert len(llm.calls) == 2 and [s["action"] for s in steps] == ["List Files", "Final Answer"]
    assert "Thought:" not in llm.calls[0].prompt.split("Respond in exactly this format")[1]


@pytest.mark.parametrize("bad, feedback", [
    ('Action: List Files\nAction Input: {"dir_path": "."}', "the entry Thought is missing"),
    ("Thought: hmm\nAction: List Files\nAction Input: {dir_path = .", "the Action Input is not valid JSON"),
    ('Thought: hmm\nAction: Delete Everything\nAction Input: {}', "'Delete Everything' is not one of the tools"),
])
def test_malformed_response_gets_feedback_and_is_asked_again(tmp_path, bad, feedback):
    _, llm, steps = run(tmp_path, "react", [bad, LIST, FINAL])
    assert feedback in llm.calls[1].prompt and "Respond again, with all of these entries" in llm.calls[1].prompt
    assert llm.calls[1].purpose == "agent step, retry 1"
    assert [s["action"] for s in steps] == ["List Files", "Final Answer"]  # the bad response took no step


def test_code_fenced_input_is_accepted_without_a_retry(tmp_path):
    fenced = 'Thought: hmm\nAction: List Files\nAction Input: ```json\n{"dir_path": "."}\n```\n'
    _, llm, steps = run(tmp_path, "react", [fenced, FINAL])
    assert len(llm.calls) == 2 and steps[0]["arguments"] == {"dir_path": "."}


def test_retries_exhausted_become_an_env_error_observation_not_a_crash(tmp_path):
    broken = "Thought: hmm\nAction: List Files\nAction Input: {dir_path = ."
    env, llm, steps = run(tmp_path, "react", [broken] * 3 + [FINAL], max_retries=2)
    assert len(llm.calls) == 4
    assert steps[0]["action"] == "List Files" and steps[0]["error"] is True
    assert steps[0]["observation"].startswith("EnvError: the input of List Files must be a JSON object")
    assert "EnvError: the input of List Files" in llm.calls[3].prompt  # the agent sees it too
    assert env.end_reason == "final answer"


def test_missing_action_after_retries_is_an_invalid_action_step(tmp_path):
    _, _, steps = run(tmp_path, "react", ["I am thinking."] * 2 + [FINAL], max_retries=1)
    assert steps[0]["observation"].startswith("EnvError: invalid action ''")


def test_long_observations_are_summarised_by_the_fast_model(tmp_path):
    big = response("Execute Script", '{"script_name": "big.py"}', full=False)
    llm = FakeLLM([big, ("fast", "it printed 9000 x"), FINAL])
    env = environment(tmp_path, agent_actions("react"), llm, files={"big.py": "print('x' * 9000)\n"})
    LLMAgent(agent_plan("react", summarize_over=5000), env.llm).run(env)
    assert llm.roles() == ["main", "fast", "main"] and llm.calls[1].purpose.startswith("summarise observation")
    assert "it printed 9000 x" in llm.calls[2].prompt and "x" * 9000 not in llm.calls[2].prompt
    step = [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"][0]
    assert "x" * 9000 in step["observation"]  # the trace keeps it whole


def test_the_run_ends_at_the_step_limit_without_final_answer(tmp_path):
    from pytest_mlab.spec.models import Limits

    llm = FakeLLM([LIST] * 3)
    env = environment(tmp_path, agent_actions("react"), llm, files=FILES, limits=Limits(max_steps=3))
    LLMAgent(agent_plan("react"), env.llm).run(env)
    assert env.end_reason == "step limit" and len(llm.calls) == 3


def test_an_agent_without_an_llm_says_how_to_give_it_one(tmp_path):
    env = environment(tmp_path, agent_actions("react"), None, files=FILES)
    with pytest.raises(LLMError, match="--llm=MODEL"):
        LLMAgent(agent_plan("react"), env.llm).run(env)


@pytest.mark.parametrize("options, where, message", [
    ('entries: [Thought, Action]', "options.entries", "must end with Action, Action Input"),
    ('entries: [Mood, Action, Action Input]', "options.entries[0]", "'Mood' is not one of"),
    ("max_retries: -1", "options.max_retries", "-1 is less than the minimum of 0"),
    ('steps_in_context: "3"', "options.steps_in_context", "'3' is not of type 'integer'"),
    ("instructions: creative", "options.instructions", "'creative' is not one of ['research', 'plain']"),
    ("temperature: hot", "options.temperature", "'hot' is not of type 'number'"),
    ("llm_timeout: 0", "options.llm_timeout", "0 is less than or equal to the minimum of 0"),
])
def test_bad_options_are_spec_errors_at_the_options_line(tmp_path, options, where, message):
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "mine.yaml").write_text("kind: Agent\nname: mine\nextends: react\noptions:\n  " + options + "\n")
    (agents / "react.yaml").write_text((AGENTS_DIR / "react.yaml").read_text())
    project = Project(tmp_path, ACTIONS_DIR, agents, tmp_path / "tasks")
    with pytest.raises(SpecError) as info:
        project.agent("mine")
    assert info.value.line == 5 and info.value.where == where and message in info.value.message, str(info.value)

"""The shared LLM loop (react, simple) against a real Environment, driven by a fake LLM."""

from __future__ import annotations

import pytest

from pytest_mlab.agents.llm_agent import LLMAgent
from pytest_mlab.errors import SpecError
from pytest_mlab.llm.base import LLMError
from pytest_mlab.spec.project import Project
from pytest_mlab.trace import read_trace
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


def test_prompt_has_tools_problem_format_and_stop_sequence_and_no_instructions(tmp_path):
    env, llm, steps = run(tmp_path, "react", [LIST, FINAL])
    prompt = llm.calls[0].prompt
    assert "- Execute Script: " in prompt
    assert 'Action: Edit Script (AI)\n  Action Input: {\n      "script_name": "[string:' in prompt
    assert "Research problem: test problem" in prompt
    assert "Thought: what you are doing now" in prompt and "Research Plan and Status" not in prompt
    assert "instructions" not in prompt and "know nothing" not in prompt  # the original ReAct agent has none
    assert "- Read File:" not in prompt and "- Python REPL:" not in prompt  # accepted, not offered
    assert llm.calls[0].stop == ("Observation:",)
    assert [s["action"] for s in steps] == ["List Files", "Final Answer"]
    assert env.end_reason == "final answer"
    assert "Thought: next step\nAction: List Files" in llm.calls[1].prompt
    assert "train.py" in llm.calls[1].prompt  # the observation of step 1


def test_an_action_accepted_but_not_offered_is_carried_out(tmp_path):
    read = response("Read File", '{"file_name": "train.py"}', full=False)
    _, llm, steps = run(tmp_path, "react", [read, FINAL])
    assert len(llm.calls) == 2 and steps[0]["action"] == "Read File" and not steps[0]["error"]
    assert "accuracy 0.5" in steps[0]["observation"]


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
    assert "Thought:" not in llm.calls[0].prompt.split("exactly this format")[1]


@pytest.mark.parametrize("bad", [
    'Action: List Files\nAction Input: {"dir_path": "."}',  # no Thought entry
    'Thought: hmm\nAction: Delete Everything\nAction Input: {}',  # no such action
    "I am thinking.",
])
def test_an_unusable_response_is_asked_again_unchanged_by_the_react_agent(tmp_path, bad):
    _, llm, steps = run(tmp_path, "react", [bad, LIST, FINAL])
    assert llm.calls[1].prompt == llm.calls[0].prompt  # the original ReAct agent adds no note
    assert llm.calls[1].purpose == "agent step, retry 1"
    assert [s["action"] for s in steps] == ["List Files", "Final Answer"]  # the bad response took no step


def test_an_unreadable_action_input_is_an_observation_not_a_retry(tmp_path):
    broken = "Thought: hmm\nAction: List Files\nAction Input: dir_path = ."
    env, llm, steps = run(tmp_path, "react", [broken, FINAL])
    assert len(llm.calls) == 2
    assert steps[0]["action"] == "List Files" and steps[0]["error"] is True
    assert steps[0]["observation"].startswith("ActionInputParsingError: ")
    assert '{"dir_path": "[' in steps[0]["observation"]  # the usage to follow
    assert "ActionInputParsingError" in llm.calls[1].prompt  # the agent sees it too
    assert env.end_reason == "final answer"


def test_max_retries_unusable_responses_in_a_row_end_the_run_as_invalid_responses(tmp_path):
    env, llm, steps = run(tmp_path, "react", ["I am thinking."] * 5)
    assert len(llm.calls) == 5 and steps == []
    assert env.end_reason == "invalid responses"
    ended = [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "ended"]
    assert "5 responses in a row could not be used" in ended[0]["detail"]


def test_long_observations_are_summarised_in_pieces_by_the_fast_model(tmp_path):
    big = response("Execute Script", '{"script_name": "big.py"}', full=False)
    llm = FakeLLM([big, ("fast", "part one"), ("fast", "part two"), ("fast", "noise [Observation]: it printed 12000 x"),
                   FINAL])
    env = environment(tmp_path, agent_actions("react"), llm, files={"big.py": "print('x' * 12000)\n"})
    LLMAgent(agent_plan("react", summarize_over=5000), env.llm).run(env)
    assert llm.roles() == ["main", "fast", "fast", "fast", "main"]
    assert all(c.purpose.startswith("summarise observation") for c in llm.calls[1:4])
    assert "from character 1 to character 10000" in llm.calls[1].prompt
    assert "part one" in llm.calls[3].prompt and "part two" in llm.calls[3].prompt
    assert "it printed 12000 x" in llm.calls[4].prompt and "noise" not in llm.calls[4].prompt
    assert "x" * 12000 not in llm.calls[4].prompt
    step = [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"][0]
    assert "x" * 12000 in step["observation"]  # the trace keeps it whole


def test_a_failed_observation_summary_shows_the_start_and_the_run_goes_on(tmp_path):
    big = response("Execute Script", '{"script_name": "big.py"}', full=False)
    llm = FakeLLM([big, ("fast", LLMError("the model refused")), FINAL])
    env = environment(tmp_path, agent_actions("react"), llm, files={"big.py": "print('x' * 6000)\n"})
    LLMAgent(agent_plan("react", summarize_over=5000), env.llm).run(env)
    assert env.end_reason == "final answer"
    assert "no summary: the model refused" in llm.calls[-1].prompt


def test_the_react_agent_shows_observations_whole_by_default(tmp_path):
    big = response("Execute Script", '{"script_name": "big.py"}', full=False)
    llm = FakeLLM([big, FINAL])
    env = environment(tmp_path, agent_actions("react"), llm, files={"big.py": "print('x' * 9000)\n"})
    LLMAgent(agent_plan("react"), env.llm).run(env)
    assert "x" * 9000 in llm.calls[1].prompt


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
    ("max_retries: 0", "options.max_retries", "0 is less than the minimum of 1"),
    ('steps_in_context: "3"', "options.steps_in_context", "'3' is not of type 'integer'"),
    ("instructions: creative", "options.instructions", "'creative' is not one of ['research', 'research-strict', 'none']"),
    ("retry_feedback: loud", "options.retry_feedback", "'loud' is not one of ['original', 'detailed', 'none']"),
    ("sampling: {main: {temperature: hot}}", "options.sampling.main.temperature", "'hot' is not of type 'number'"),
    ("sampling: {main: {timeout: 0}}", "options.sampling.main.timeout", "0 is less than or equal to the minimum of 0"),
    ("sampling: {judge: {}}", "options.sampling.judge", "unknown key 'judge'; allowed keys: edit, fast, main"),
    ("temperature: 0.5", "options.temperature", "unknown key 'temperature'"),
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

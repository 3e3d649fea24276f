"""Append Summary to Research Log, Retrieval from Research Log and Reflection."""

from __future__ import annotations

from pytest_mlab.actions.research_log import retrieve
from pytest_mlab.env import ReadOnlyRules
from pytest_mlab.llm import TokenLimitExceeded
from tests.agents.fakes import FakeLLM, environment

ACTIONS = ("Append Summary to Research Log", "Retrieval from Research Log", "Reflection")


def test_append_then_retrieve_and_reflect_read_the_log(tmp_path):
    llm = FakeLLM([("fast", "baseline was 57"), ("fast", "try more features")])
    env = environment(tmp_path, ACTIONS, llm)
    assert env.step("Append Summary to Research Log", {"content": "Step 1: baseline MAE 57.2"}).startswith("Appended")
    env.step("Append Summary to Research Log", {"content": "Step 2: tried trees"})
    assert (tmp_path / "ws/research_log.log").read_text() == "Step 1: baseline MAE 57.2\nStep 2: tried trees\n"
    assert env.step("Retrieval from Research Log", {"current_plan": "improve MAE"}) == "baseline was 57"
    assert "Step 1: baseline MAE 57.2" in llm.calls[0].prompt and "improve MAE" in llm.calls[0].prompt
    assert env.step("Reflection", {"things_to_reflect_on": "what next"}) == "Reflection: try more features\n"
    assert "Step 2: tried trees" in llm.calls[1].prompt and "what next" in llm.calls[1].prompt


def test_append_adds_exactly_one_line_break(tmp_path):
    env = environment(tmp_path, ACTIONS, FakeLLM([]))
    env.step("Append Summary to Research Log", {"content": "\n\nStep 1:\n[Action] ran\n"})
    assert (tmp_path / "ws/research_log.log").read_text() == "\n\nStep 1:\n[Action] ran\n\n"


def test_reflection_asks_the_fast_model_with_the_problem_and_the_whole_log(tmp_path):
    log = "Step 1: FIRST ENTRY\n" + "".join(f"Step {n}: {'x' * 200}\n" for n in range(2, 200))
    llm = FakeLLM([("fast", "It went well.")])
    env = environment(tmp_path, ACTIONS, llm, files={"research_log.log": log})
    assert env.step("Reflection", {"things_to_reflect_on": "the baseline"}) == "Reflection: It went well.\n"
    prompt = llm.calls[0].prompt
    assert len(log) > 20_000 and log in prompt  # nothing cut, the first entry included
    assert "test problem" in prompt and "the baseline" in prompt
    assert "natural language" in prompt and "truthful" in prompt
    assert llm.calls[0].purpose == "reflection"


def test_retrieval_asks_the_fast_model_with_the_problem_the_plan_and_the_whole_log(tmp_path):
    log = "Step 1: FIRST ENTRY\n" + "y" * 30_000 + "\n"
    llm = FakeLLM([("fast", "- baseline 57")])
    env = environment(tmp_path, ACTIONS, llm, files={"research_log.log": log})
    assert env.step("Retrieval from Research Log", {"current_plan": "1. baseline **done**"}) == "- baseline 57"
    prompt = llm.calls[0].prompt
    assert log in prompt and "test problem" in prompt and "1. baseline **done**" in prompt
    assert "concisely" in prompt.lower() and "next steps" in prompt


def test_retrieve_shows_the_research_problem_it_is_given():
    llm = FakeLLM([("fast", "summary")])
    assert retrieve(llm, "Step 1: ran\n", "plan A", research_problem="predict house prices") == "summary"
    assert "predict house prices" in llm.calls[0].prompt and "plan A" in llm.calls[0].prompt


def test_a_log_too_long_for_the_model_is_an_error_observation(tmp_path):
    class TooLong:
        def complete(self, prompt, **_):
            raise TokenLimitExceeded(f"{len(prompt)} characters")

    env = environment(tmp_path, ACTIONS, TooLong(), files={"research_log.log": "z" * 50_000})
    for action, arguments in [("Reflection", {"things_to_reflect_on": "x"}),
                              ("Retrieval from Research Log", {"current_plan": "x"})]:
        observation = env.step(action, arguments)
        assert observation.startswith("EnvError: too long input for the tool")
        assert int(observation.split("(")[1].split()[0]) > 50_000  # the model was shown the whole log


def test_retrieval_from_an_empty_log_needs_no_llm(tmp_path):
    llm = FakeLLM([])
    env = environment(tmp_path, ACTIONS, llm, files={"research_log.log": ""})
    assert "empty" in env.step("Retrieval from Research Log", {"current_plan": "x"})
    assert llm.calls == []


def test_a_log_never_written_is_an_error_for_both_readers(tmp_path):
    llm = FakeLLM([])
    env = environment(tmp_path, ACTIONS, llm)
    for action, arguments in [("Reflection", {"things_to_reflect_on": "x"}),
                              ("Retrieval from Research Log", {"current_plan": "x"})]:
        assert env.step(action, arguments) == ("EnvError: cannot read the research log: research_log.log "
                                               "does not exist yet")
    assert llm.calls == []


def test_a_read_only_log_name_stays_read_only(tmp_path):
    env = environment(tmp_path, ACTIONS, FakeLLM([]), files={"research_log.log": "data\n"},
                      read_only=ReadOnlyRules(frozenset({"research_log.log"})))
    assert "read-only" in env.step("Append Summary to Research Log", {"content": "x"})
    assert (tmp_path / "ws/research_log.log").read_text() == "data\n"

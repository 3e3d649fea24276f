"""Append Summary to Research Log, Retrieval from Research Log and Reflection."""

from __future__ import annotations

from pytest_mlab.env import ReadOnlyRules
from tests.agents.fakes import FakeLLM, environment

ACTIONS = ("Append Summary to Research Log", "Retrieval from Research Log", "Reflection")


def test_append_then_retrieve_and_reflect_read_the_log(tmp_path):
    llm = FakeLLM([("fast", "baseline was 57"), ("main", "try more features")])
    env = environment(tmp_path, ACTIONS, llm)
    assert env.step("Append Summary to Research Log", {"content": "Step 1: baseline MAE 57.2"}).startswith("Appended")
    env.step("Append Summary to Research Log", {"content": "Step 2: tried trees"})
    assert (tmp_path / "ws/research_log.log").read_text() == "Step 1: baseline MAE 57.2\nStep 2: tried trees\n"
    assert env.step("Retrieval from Research Log", {"current_plan": "improve MAE"}) == "baseline was 57"
    assert "Step 1: baseline MAE 57.2" in llm.calls[0].prompt and "improve MAE" in llm.calls[0].prompt
    assert env.step("Reflection", {"things_to_reflect_on": "what next"}) == "try more features"
    assert "Step 2: tried trees" in llm.calls[1].prompt and "what next" in llm.calls[1].prompt


def test_retrieval_from_an_empty_log_needs_no_llm(tmp_path):
    llm = FakeLLM([])
    env = environment(tmp_path, ACTIONS, llm)
    assert "empty" in env.step("Retrieval from Research Log", {"current_plan": "x"})
    assert llm.calls == []


def test_a_read_only_log_name_stays_read_only(tmp_path):
    env = environment(tmp_path, ACTIONS, FakeLLM([]), files={"research_log.log": "data\n"},
                      read_only=ReadOnlyRules(frozenset({"research_log.log"})))
    assert "read-only" in env.step("Append Summary to Research Log", {"content": "x"})
    assert (tmp_path / "ws/research_log.log").read_text() == "data\n"

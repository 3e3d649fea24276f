"""A run recorded in the original MLAgentBench's format, replayed through our research agent.

The fixture holds every completion the original's models returned, in call order, and the
original's trace of environment steps. Fed the same completions, our agent must take the same
actions with the same arguments, in the same order: the research-log entry after every step, the
retrieval once steps leave the context (counted from the history the original keeps, which drops
a step whose input could not be read), and the re-ask after a response with no action.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from pytest_mlab.agents.research import ResearchAgent
from pytest_mlab.trace import read_trace
from tests.agents.fakes import FakeLLM, agent_actions, agent_plan, environment

FIXTURES = Path(__file__).parents[1] / "fixtures"
FIXTURE = FIXTURES / "original_trajectory"
LOG = "Append Summary to Research Log"


def original_steps(fixture: Path = FIXTURE) -> list[tuple[str, dict]]:
    """The original's environment steps up to its Final Answer (after it, the original still
    writes a research-log entry into an environment that has shut down; ours stops)."""
    steps = [(s["action"]["name"], s["action"]["args"]) for s in json.loads((fixture / "trace.json").read_text())["steps"]]
    return steps[:[name for name, _ in steps].index("Final Answer") + 1]


def replay(fixture: Path, tmp_path: Path) -> tuple[Any, list[dict], list[dict]]:
    """The fixture's completions through our research agent: its Environment, our steps that the
    original would have refused to parse, and the others."""
    calls = yaml.safe_load((fixture / "calls.yaml").read_text())
    llm = FakeLLM([(call["role"], call["text"]) for call in calls])
    env = environment(tmp_path, agent_actions("research"), llm, files={"train.py": "print('accuracy 0.5')\n"})
    ResearchAgent(agent_plan("research"), env.llm).run(env)
    assert not llm.responses, "every recorded completion was asked for"
    ours = [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"]
    refused = [s for s in ours if s["observation"].startswith("ActionInputParsingError")]
    return env, refused, [s for s in ours if s not in refused]


def test_replayed_completions_take_the_original_actions(tmp_path):
    env, refused, kept = replay(FIXTURE, tmp_path)
    assert [s["action"] for s in refused] == ["Execute Script"]  # a step of ours, an agent-only step there
    taken = [(s["action"], s["arguments"]) for s in kept]
    expected = original_steps()
    assert [name for name, _ in taken] == [name for name, _ in expected]
    for (name, ours_args), (_, their_args) in zip(taken, expected):
        if name != LOG:  # the log entries' wording is the models'; checked below
            assert ours_args == _as_we_execute(their_args), name
    assert env.end_reason == "final answer"
    log = (tmp_path / "ws" / "research_log.log").read_text()
    assert "Step 0:\n[Reasoning]: The agent needed" in log and "Some preamble" not in log
    assert (tmp_path / "ws" / "train.py").read_text() == "print('accuracy 0.9')\n"


def _as_we_execute(arguments: dict) -> dict:
    """A list given for a text argument is executed as its lines."""
    return {key: "\n".join(value) if isinstance(value, list) else value for key, value in arguments.items()}


def test_a_missing_required_argument_is_an_input_the_original_could_not_parse(tmp_path):
    """Understand File without things_to_look_for: no environment step in the original, the
    refusal names the missing argument, and the research log numbers the steps as the original's
    history does (the refused step leaves it once the next input is read, so its number is reused)."""
    fixture = FIXTURES / "original_trajectory_missing_argument"
    env, refused, kept = replay(fixture, tmp_path)
    assert [(s["action"], s["arguments"]) for s in refused] == [("Understand File", None)]
    assert "Understand File needs the argument 'things_to_look_for'" in refused[0]["observation"]
    taken = [(s["action"], s["arguments"]) for s in kept]
    expected = original_steps(fixture)
    assert [name for name, _ in taken] == [name for name, _ in expected]
    assert [step for step in taken if step[0] != LOG] == [step for step in expected if step[0] != LOG]
    assert env.end_reason == "final answer"
    log = (tmp_path / "ws" / "research_log.log").read_text()
    assert re.findall(r"^Step (\d+):", log, re.MULTILINE) == ["0", "1", "2"]
    assert "without saying what to look for" in log.split("Step 1:")[1].split("Step 2:")[0]

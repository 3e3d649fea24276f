"""The loop every LLM-driven agent shares: prompt, parse, retry with feedback, act, remember.

Agents differ only by options in their YAML (which response entries are required, which
instructions, how many steps stay in context); the research agent adds a research log on top.

Options (``options:`` in agents/*.yaml):
- ``entries``: the response entries, in order; must end with ``Action`` and ``Action Input``.
- ``instructions``: ``research`` (the paper's research instructions) or ``plain``.
- ``steps_in_context``: how many of the latest steps are shown in full (3).
- ``max_retries``: how often a malformed response is asked again, with feedback (5).
- ``summarize_over``: observations longer than this many characters are summarised by the fast
  model before they enter the history (5000); the trace keeps them whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_mlab.actions.understand import describe_blocks
from pytest_mlab.agents import prompts
from pytest_mlab.agents.base import Agent
from pytest_mlab.agents.parsing import (STOP, ResponseError, cut_at_stop, missing_entries, parse_action_input,
                                        parse_entries)
from pytest_mlab.env.environment import Environment, usage
from pytest_mlab.errors import SpecError
from pytest_mlab.llm.base import LLMError
from pytest_mlab.spec.models import AgentSpec
from pytest_mlab.spec.plan import RunPlan

DEFAULTS: dict[str, Any] = {
    "entries": ["Thought", "Action", "Action Input"],
    "instructions": "plain",
    "steps_in_context": 3,
    "max_retries": 5,
    "summarize_over": 5000,
}

_WHOLE = {"type": "integer", "minimum": 0}
#: ``options:`` of every LLM-driven agent: the loop's own and those the LLM layer reads.
LLM_AGENT_OPTIONS: dict[str, Any] = {
    "entries": {"type": "array", "items": {"enum": list(prompts.ENTRY_GUIDES)}, "minItems": 2, "uniqueItems": True},
    "instructions": {"enum": list(prompts.INSTRUCTIONS)},
    "steps_in_context": _WHOLE,
    "max_retries": _WHOLE,
    "summarize_over": _WHOLE,
    "temperature": {"type": "number", "minimum": 0},
    "max_tokens": {"type": "integer", "minimum": 1},
    "llm_attempts": {"type": "integer", "minimum": 1},
    "llm_timeout": {"type": "number", "exclusiveMinimum": 0},
}


@dataclass
class Turn:
    """One step as the agent remembers it."""

    number: int
    response: str
    entries: dict[str, str]
    action: str
    observation: str  # possibly summarised


@dataclass
class Parsed:
    """What could be read from one response; ``problem`` says what is wrong, None when usable."""

    text: str
    entries: dict[str, str]
    action: str
    arguments: dict[str, Any] | str
    problem: str | None


class LLMAgent(Agent):
    #: Actions the agent uses for its own bookkeeping; not offered to the model.
    internal_actions: tuple[str, ...] = ()

    options_schema = {"type": "object", "additionalProperties": False, "properties": LLM_AGENT_OPTIONS}

    def __init__(self, plan: RunPlan, llm: Any = None) -> None:
        super().__init__(plan, llm)
        self.config = {**DEFAULTS, **self.options}

    @classmethod
    def check_spec(cls, spec: AgentSpec) -> None:
        entries = spec.options.get("entries")
        if entries is not None and entries[-2:] != ["Action", "Action Input"]:
            raise SpecError(spec.source, None, "options.entries",
                            f"must end with Action, Action Input (the response's last entries); got {entries!r}")

    # ------------------------------------------------------------------ the loop

    def run(self, env: Environment) -> None:
        if self.llm is None:
            raise LLMError(f"agent '{self.spec.name}' needs an LLM: run it with --llm=MODEL, or offline with "
                           f"--llm=scripted:FILE")
        self.tools = [spec for name, spec in env.actions.items() if name not in self.internal_actions]
        self.fixed_prompt = prompts.system_prompt(self.tools, env.research_problem, self.config["entries"],
                                                  self.config["instructions"])
        turns: list[Turn] = []
        while not env.done:
            parsed = self.respond(self.prompt(turns))
            thinking = {name: text for name, text in parsed.entries.items() if name not in ("Action", "Action Input")}
            observation = env.step(parsed.action, parsed.arguments, thinking=thinking)
            turn = Turn(len(turns) + 1, parsed.text, parsed.entries, parsed.action,
                        self.condense(parsed.action, observation))
            turns.append(turn)
            if not env.done:
                self.after_step(env, turn)

    def prompt(self, turns: list[Turn]) -> str:
        keep = self.config["steps_in_context"]
        recent = turns[-keep:] if keep else []
        older = turns[:len(turns) - len(recent)]
        blocks = [prompts.step_block(turn.number, turn.response, turn.observation) for turn in recent]
        return self.fixed_prompt + "\n" + prompts.history_section(self.recall(older, turns), blocks)

    def respond(self, prompt: str) -> Parsed:
        """Ask until the response is usable, at most ``max_retries`` times more; the last try is
        acted on anyway, so the Environment turns whatever is wrong into an EnvError observation."""
        feedback = ""
        parsed = None
        for attempt in range(self.config["max_retries"] + 1):
            purpose = "agent step" if attempt == 0 else f"agent step, retry {attempt}"
            text = cut_at_stop(self.llm.complete(prompt + feedback, role="main", stop=(STOP,), purpose=purpose))
            parsed = self.parse(text)
            if parsed.problem is None:
                return parsed
            feedback = prompts.format_feedback(parsed.problem, self.config["entries"])
        assert parsed is not None
        return parsed

    def parse(self, text: str) -> Parsed:
        entries = parse_entries(text, list(prompts.ENTRY_GUIDES))
        action = entries.get("Action", "").strip().splitlines()[0].strip(" `*\"'") if entries.get("Action") else ""
        raw_input = entries.get("Action Input", "")
        missing = missing_entries(entries, [name for name in self.config["entries"] if name != "Action Input"])
        if missing:
            return Parsed(text, entries, action, raw_input, f"the entr{'y' if len(missing) == 1 else 'ies'} "
                                                           f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing")
        spec = next((tool for tool in self.tools if tool.name == action), None)
        if spec is None:
            names = ", ".join(tool.name for tool in self.tools)
            return Parsed(text, entries, action, raw_input, f"'{action}' is not one of the tools ({names})")
        try:
            arguments = parse_action_input(raw_input, [arg.name for arg in spec.arguments])
        except ResponseError as exc:
            return Parsed(text, entries, action, raw_input, f"{exc}; use {usage(spec)}")
        return Parsed(text, entries, action, arguments, None)

    def condense(self, action: str, observation: str) -> str:
        """Long observations enter the history as a fast-model summary (the trace keeps them whole)."""
        limit = self.config["summarize_over"]
        if not limit or len(observation) <= limit:
            return observation
        summary = describe_blocks(self.llm, observation, prompts.OBSERVATION_REQUEST,
                                  what=f"the observation of {action}", purpose="summarise observation")
        return f"[The observation was {len(observation)} characters long; a summary:]\n{summary}"

    # ------------------------------------------------------------------ hooks

    def recall(self, older: list[Turn], turns: list[Turn]) -> str | None:
        """A summary of steps no longer shown in full; plain agents simply forget them."""
        return None

    def after_step(self, env: Environment, turn: Turn) -> None:
        """Bookkeeping after a step that did not end the run."""


"""The loop every LLM-driven agent shares: prompt, read the response, ask again, act, remember.

It follows the original MLAgentBench agents (``MLAgentBench/agents/agent.py``,
``agent_research.py`` at 5d71205) in everything that moves results; docs/agents.md lists the
facts. Agents differ only by options in their YAML; the research agent adds a research log.

Options (``options:`` in agents/*.yaml):
- ``entries``: the response entries, in order; must end with ``Action`` and ``Action Input``.
- ``instructions``: ``research`` (the original research agent's), ``research-strict`` (ours, a
  named variant) or ``none`` (the original ReAct and simple agents have none).
- ``steps_in_context``: how many of the latest steps are shown in full (3).
- ``max_retries``: how many responses one step may take before the run ends as "invalid responses" (5).
  A response is asked again only when its format is wrong or it names no known action.
- ``retry_feedback``: ``original`` (a note naming the required entries is appended to the prompt
  for each unusable response, as the original research agent does), ``detailed`` (the note also
  says what was wrong) or ``none`` (ask again unchanged, as the original ReAct agent does).
- ``summarize_over``: observations longer than this many characters enter the history as a fast-model
  summary (the original research agent: 5000; 0: never); the trace keeps them whole.
- ``sampling``, ``llm_attempts``, ``api_base``: read by the LLM layer (pytest_mlab/llm/options.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from pytest_mlab.actions.understand import read_in_blocks, split_chars
from pytest_mlab.agents import prompts
from pytest_mlab.agents.base import Agent
from pytest_mlab.agents.parsing import STOP, ParsedResponse, cut_at_stop, read_response
from pytest_mlab.env.environment import Environment, usage
from pytest_mlab.errors import SpecError
from pytest_mlab.llm.base import ENDS_RUN, LLMError, TokenLimitExceeded
from pytest_mlab.llm.options import LLM_OPTIONS_SCHEMA
from pytest_mlab.outcomes import EndReason
from pytest_mlab.spec.models import AgentSpec
from pytest_mlab.spec.plan import RunPlan

DEFAULTS: dict[str, Any] = {
    "entries": ["Thought", "Action", "Action Input"],
    "instructions": "none",
    "steps_in_context": 3,
    "max_retries": 5,
    "retry_feedback": "original",
    "summarize_over": 0,
}

_WHOLE = {"type": "integer", "minimum": 0}
#: ``options:`` of every LLM-driven agent: the loop's own and those the LLM layer reads.
LLM_AGENT_OPTIONS: dict[str, Any] = {
    "entries": {"type": "array", "items": {"enum": list(prompts.ENTRY_GUIDES)}, "minItems": 2, "uniqueItems": True},
    "instructions": {"enum": list(prompts.INSTRUCTIONS)},
    "steps_in_context": _WHOLE,
    "max_retries": {"type": "integer", "minimum": 1},
    "retry_feedback": {"enum": ["original", "detailed", "none"]},
    "summarize_over": _WHOLE,
    **LLM_OPTIONS_SCHEMA,
}

#: Block size for summarising a long observation, in characters (the original's).
SUMMARY_BLOCK_CHARS = 10_000


@dataclass
class Turn:
    """One step as the agent remembers it."""

    number: int  # 0-based, as the original numbers its research-log entries
    shown: str  # the response as the history shows it again
    action: str
    observation: str  # possibly summarised
    input_error: bool = False  # the Action Input could not be read


class LLMAgent(Agent):
    #: The original research agent drops steps whose input could not be read from its history once
    #: a later step's input could; its ReAct and simple agents keep them.
    forget_input_errors = False

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
        self.entries = list(self.config["entries"])
        offered = [env.actions[name] for name in self.spec.actions if name in env.actions]
        self.fixed_prompt = prompts.system_prompt(offered, env.research_problem, self.entries,
                                                  self.config["instructions"])
        turns: list[Turn] = []
        while not env.done:
            history = self.history(env, turns)
            if env.done:  # the agent's own bookkeeping step reached a limit
                break
            parsed = self.respond(self.fixed_prompt + "\n" + history, env)
            if parsed is None:
                return
            turn = self.act(env, parsed, number=len(turns))
            turns.append(turn)
            if self.forget_input_errors and not turn.input_error:
                turns = [old for old in turns if not old.input_error]
            if not env.done:
                self.after_step(env, turn)

    def history(self, env: Environment, turns: list[Turn]) -> str:
        """The changing part of the prompt: older steps (the research agent recalls them), then the
        last ``steps_in_context`` steps in full."""
        keep = self.config["steps_in_context"]
        recent = turns[-keep:] if keep else []
        started = len(turns) > len(recent)
        summary = self.recall(env, turns) if started else None
        blocks = [prompts.step_block(turn.shown, turn.observation) for turn in recent]
        return prompts.history_section(summary, blocks, started)

    def respond(self, prompt: str, env: Environment) -> ParsedResponse | None:
        """Ask until a response has the format and names a known action, at most ``max_retries``
        times; None (the run ended as "invalid responses") when none did. An unreadable Action Input
        is not asked again: the step goes on, and the agent sees the error as its observation."""
        problem = None
        for attempt in range(self.config["max_retries"]):
            purpose = "agent step" if attempt == 0 else f"agent step, retry {attempt}"
            text = cut_at_stop(self.llm.complete(prompt, role="main", stop=(STOP,), purpose=purpose))
            parsed = read_response(text, self.entries, env.actions)
            if parsed.kind in ("ok", "action input"):
                return parsed
            problem = parsed.problem
            feedback = self.config["retry_feedback"]
            if feedback != "none":
                prompt += prompts.format_feedback(self.entries, problem if feedback == "detailed" else None)
        env.end(EndReason.INVALID_RESPONSES,
                f"{self.config['max_retries']} responses in a row could not be used; the last: {problem}")
        return None

    def act(self, env: Environment, parsed: ParsedResponse, *, number: int) -> Turn:
        thinking = {name: text for name, text in parsed.entries.items() if name not in ("Action", "Action Input")}
        if parsed.arguments is None:
            refusal = prompts.input_error_observation(parsed.problem or "unreadable input", parsed.action,
                                                      usage(env.actions[parsed.action]))
            observation = env.step(parsed.action, None, thinking=thinking, refused=refusal)
        else:
            observation = env.step(parsed.action, parsed.arguments, thinking=thinking)
        shown = prompts.printed_response(self.remembered(parsed.entries), self.entries)
        return Turn(number, shown, parsed.action, self.condense(shown, observation),
                    input_error=parsed.arguments is None)

    def remembered(self, entries: dict[str, str]) -> dict[str, str]:
        """The entries as the history shows them again: the research plan without code fences and
        without the ``**`` marks of what was new (as the original does)."""
        plan = entries.get("Research Plan and Status")
        if plan is None:
            return entries
        return {**entries, "Research Plan and Status": plan.strip("`").replace("**", "").strip()}

    def condense(self, shown: str, observation: str) -> str:
        """A long observation enters the history as a fast-model summary, made from 10,000-character
        pieces and merged (the trace keeps it whole)."""
        limit = self.config["summarize_over"]
        if not limit or len(observation) <= limit:
            return observation
        try:
            summary = read_in_blocks(self.llm, split_chars(observation, SUMMARY_BLOCK_CHARS),
                                     partial(prompts.summarize_observation_block, shown),
                                     partial(prompts.merge_observation_summaries, shown),
                                     purpose="summarise observation")
        except ENDS_RUN:
            raise
        except (TokenLimitExceeded, LLMError) as exc:  # the history shows the start rather than lose the step
            return f"{observation[:limit]}\n[... {len(observation) - limit} more characters; no summary: {exc}]"
        return summary.split(prompts.OBSERVATION_MARK, 1)[1] if prompts.OBSERVATION_MARK in summary else summary

    # ------------------------------------------------------------------ hooks

    def recall(self, env: Environment, turns: list[Turn]) -> str | None:
        """A summary of steps no longer shown in full; plain agents simply forget them."""
        return None

    def after_step(self, env: Environment, turn: Turn) -> None:
        """Bookkeeping after a step that did not end the run."""

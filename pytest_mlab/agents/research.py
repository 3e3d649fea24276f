"""The paper's research agent: the shared LLM loop plus a research log, as the original runs it.

With ``retrieval: true``, after every step that did not end the run the fast model condenses the
step into a research-log entry (asked again up to ``max_retries`` times until it writes the
``[Reasoning]:`` label, else the entry says it was too long to summarise), which the Append
Summary to Research Log action writes to ``research_log.log``. Once steps fall out of the last
``steps_in_context``, each prompt starts its history with the observation of a Retrieval from
Research Log action, taken with an empty current plan. Both actions are steps of their own in
the trace and count against the step limit, as in the original system. With ``retrieval: false``
there is neither.
"""

from __future__ import annotations

from typing import Any

from pytest_mlab.agents import prompts
from pytest_mlab.agents.llm_agent import LLM_AGENT_OPTIONS, LLMAgent, Turn
from pytest_mlab.env.environment import Environment
from pytest_mlab.errors import SpecError
from pytest_mlab.llm.base import ENDS_RUN, LLMError, TokenLimitExceeded
from pytest_mlab.spec.models import AgentSpec
from pytest_mlab.spec.plan import RunPlan

APPEND = "Append Summary to Research Log"
RETRIEVE = "Retrieval from Research Log"

RESEARCH_DEFAULTS: dict[str, Any] = {
    "entries": ["Reflection", "Research Plan and Status", "Fact Check", "Thought", "Action", "Action Input"],
    "instructions": "research",
    "summarize_over": 5000,
    "retrieval": True,
}


class ResearchAgent(LLMAgent):
    forget_input_errors = True
    options_schema = {"type": "object", "additionalProperties": False,
                      "properties": {**LLM_AGENT_OPTIONS, "retrieval": {"type": "boolean"}}}

    def __init__(self, plan: RunPlan, llm: Any = None) -> None:
        super().__init__(plan, llm)
        self.config = {**self.config, **RESEARCH_DEFAULTS, **self.options}
        self.retrieval = self.config["retrieval"]

    @classmethod
    def check_spec(cls, spec: AgentSpec) -> None:
        super().check_spec(spec)
        if spec.options.get("retrieval", True):
            missing = [name for name in (APPEND, RETRIEVE) if name not in spec.environment_actions]
            if missing:
                raise SpecError(spec.source, None, "accepts" if spec.accepts else "actions",
                                f"with options.retrieval: true the agent needs the action"
                                f"{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)} "
                                f"(under actions or accepts)")

    def after_step(self, env: Environment, turn: Turn) -> None:
        if not self.retrieval:
            return
        env.step(APPEND, {"content": f"\n\nStep {turn.number}:\n{self.log_entry(turn)}\n"})

    def log_entry(self, turn: Turn) -> str:
        prompt = prompts.summarize_step(turn.shown, turn.observation)
        for attempt in range(self.config["max_retries"]):
            try:
                text = self.llm.complete(prompt, role="fast", purpose="research log entry" +
                                         (f", retry {attempt}" if attempt else ""))
            except ENDS_RUN:
                raise
            except (TokenLimitExceeded, LLMError):
                continue
            if prompts.LOG_ENTRY_MARK in text:
                return prompts.LOG_ENTRY_MARK + text.split(prompts.LOG_ENTRY_MARK, 1)[1]
        return prompts.LOG_ENTRY_FALLBACK

    def recall(self, env: Environment, turns: list[Turn]) -> str | None:
        if not self.retrieval:
            return None
        return env.step(RETRIEVE, {"current_plan": ""})

"""The paper's research agent: the shared LLM loop plus a research log.

With ``retrieval: true`` every step that does not end the run is condensed by the fast model and
appended to ``research_log.log`` through the Append Summary to Research Log action (so it is a
step of its own in the trace and counts against the step limit, as in the original system), and
once steps fall out of the last ``steps_in_context``, the prompt gets a retrieval summary of the
log made for the current Research Plan and Status. With ``retrieval: false`` it has neither.
"""

from __future__ import annotations

from typing import Any

from pytest_mlab.actions.research_log import retrieve
from pytest_mlab.agents import prompts
from pytest_mlab.agents.llm_agent import LLM_AGENT_OPTIONS, LLMAgent, Turn
from pytest_mlab.env.environment import Environment
from pytest_mlab.errors import SpecError
from pytest_mlab.spec.models import AgentSpec
from pytest_mlab.spec.plan import RunPlan

APPEND = "Append Summary to Research Log"


class ResearchAgent(LLMAgent):
    internal_actions = (APPEND,)
    options_schema = {"type": "object", "additionalProperties": False,
                      "properties": {**LLM_AGENT_OPTIONS, "retrieval": {"type": "boolean"}}}

    def __init__(self, plan: RunPlan, llm: Any = None) -> None:
        super().__init__(plan, llm)
        self.retrieval = self.config.get("retrieval", True)
        self.log: list[str] = []

    @classmethod
    def check_spec(cls, spec: AgentSpec) -> None:
        super().check_spec(spec)
        if spec.options.get("retrieval", True) and APPEND not in spec.actions:
            raise SpecError(spec.source, None, "actions",
                            f"with options.retrieval: true the agent needs the action '{APPEND}'")

    def after_step(self, env: Environment, turn: Turn) -> None:
        if not self.retrieval:
            return
        summary = self.llm.complete(prompts.summarize_step(turn.response, turn.observation), role="fast",
                                    purpose="research log entry")
        entry = f"Step {turn.number}:\n{summary.strip()}\n"
        self.log.append(entry)
        env.step(APPEND, {"content": entry})

    def recall(self, older: list[Turn], turns: list[Turn]) -> str | None:
        if not self.retrieval or not older:
            return None
        plan = turns[-1].entries.get("Research Plan and Status", "")
        return retrieve(self.llm, "\n".join(self.log), plan)

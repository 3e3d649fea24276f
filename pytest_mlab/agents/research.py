"""The paper's research agent: the shared LLM loop plus a research log.

With ``retrieval: true`` every step that does not end the run is condensed by the fast model and
appended to ``research_log.log`` through the Append Summary to Research Log action (so it is a
step of its own in the trace and counts against the step limit, as in the original system), and
once steps fall out of the last ``steps_in_context``, the prompt gets a retrieval summary of the
log made for the current Research Plan and Status. With ``retrieval: false`` it has neither.
"""

from __future__ import annotations

from pytest_mlab.actions.research_log import retrieve
from pytest_mlab.agents import prompts
from pytest_mlab.agents.llm_agent import LLMAgent, Turn
from pytest_mlab.env.environment import Environment
from pytest_mlab.errors import SpecError
from pytest_mlab.spec.plan import RunPlan

APPEND = "Append Summary to Research Log"


class ResearchAgent(LLMAgent):
    internal_actions = (APPEND,)

    def __init__(self, plan: RunPlan) -> None:
        super().__init__(plan)
        self.retrieval = self.config.get("retrieval", True)
        if not isinstance(self.retrieval, bool):
            raise SpecError(plan.agent.source, None, "options.retrieval", f"must be true or false, got {self.retrieval!r}")
        if self.retrieval and APPEND not in plan.agent.actions:
            raise SpecError(plan.agent.source, None, "actions",
                            f"with options.retrieval: true the agent needs the action '{APPEND}'")
        self.log: list[str] = []

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

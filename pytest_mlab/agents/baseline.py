"""The paper's baseline: run the starter code unchanged, then submit. Its score is the baseline."""

from __future__ import annotations

from pytest_mlab.agents.base import Agent
from pytest_mlab.env.environment import Environment


class BaselineAgent(Agent):
    def run(self, env: Environment) -> None:
        observation = env.step("Execute Script", {"script_name": self.plan.task.starter})
        env.step("Final Answer", {"final_answer": f"Ran {self.plan.task.starter} unchanged.\n{observation[-500:]}"})

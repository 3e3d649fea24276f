"""Applies the task's reference solution through the same actions an agent has, runs it, submits.

Proves a task is solvable and its grader rewards a real improvement.
"""

from __future__ import annotations


from pytest_mlab.agents.base import Agent
from pytest_mlab.env.environment import Environment
from pytest_mlab.errors import SpecError


class ReferenceAgent(Agent):
    def run(self, env: Environment) -> None:
        task = self.plan.task
        folder = task.assets / task.reference_files
        if not folder.is_dir():
            raise SpecError(task.source, None, "reference.files",
                            f"the reference agent needs a folder '{task.reference_files}' in {task.assets}")
        for path, relative in task.reference_solution():
            observation = env.step("Write File", {"file_name": relative, "content": path.read_text(encoding="utf-8")})
            if observation.startswith("EnvError"):
                raise SpecError(task.source, None, "reference", f"writing reference file {relative}: {observation}")
        script = task.reference_script or task.starter
        observation = env.step("Execute Script", {"script_name": script})
        env.step("Final Answer", {"final_answer": f"Applied the reference solution and ran {script}.\n{observation[-500:]}"})

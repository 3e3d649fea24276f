"""The agent interface and the loader for ``implementation: module:Class`` in agents/*.yaml."""

from __future__ import annotations

import abc
import importlib

from pytest_mlab.env.environment import Environment
from pytest_mlab.errors import SpecError
from pytest_mlab.spec.plan import RunPlan


class Agent(abc.ABC):
    """Drives one run: calls ``env.step`` until it submits or the environment says it is done."""

    def __init__(self, plan: RunPlan) -> None:
        self.plan = plan
        self.spec = plan.agent
        self.options = plan.agent.options

    @abc.abstractmethod
    def run(self, env: Environment) -> None: ...


def load_agent(plan: RunPlan) -> Agent:
    module_name, _, class_name = plan.agent.implementation.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise SpecError(plan.agent.source, None, "implementation",
                        f"cannot load agent class '{plan.agent.implementation}': {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise SpecError(plan.agent.source, None, "implementation",
                        f"'{plan.agent.implementation}' is not a subclass of pytest_mlab.agents.Agent")
    return cls(plan)

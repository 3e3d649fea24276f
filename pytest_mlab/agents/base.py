"""The agent interface and the loader for ``implementation: module:Class`` in agents/*.yaml."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from pytest_mlab.env.environment import Environment
from pytest_mlab.errors import SpecError
from pytest_mlab.spec.models import AgentSpec
from pytest_mlab.spec.plan import RunPlan
from pytest_mlab.spec.refs import resolve_object


class Agent(abc.ABC):
    """Drives one run: calls ``env.step`` until it submits or the environment says it is done.

    ``options_schema`` is the JSON Schema of the agent spec's ``options:``; specs are checked
    against it when pytest collects them, so a bad option is a ``file:line`` error before any run,
    and the agent can trust ``self.options``. ``check_spec`` adds checks a schema cannot express.
    """

    options_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False, "properties": {}}

    def __init__(self, plan: RunPlan, llm: Any = None) -> None:
        self.plan = plan
        self.spec = plan.agent
        self.options = plan.agent.options
        self.llm = llm  # pytest_mlab.llm.base.LLM, or None for agents that use none

    @classmethod
    def check_spec(cls, spec: AgentSpec) -> None:
        """Raise a SpecError for what the options schema cannot say (e.g. an option that needs an action)."""

    @abc.abstractmethod
    def run(self, env: Environment) -> None: ...


def agent_class(spec: AgentSpec) -> type[Agent]:
    found = resolve_object(spec.implementation, source=spec.source, purpose=f"agent '{spec.name}'")
    if not (isinstance(found, type) and issubclass(found, Agent)):
        raise SpecError(spec.source, None, "implementation",
                        f"'{spec.implementation}' is not a subclass of pytest_mlab.agents.Agent")
    return found


def load_agent(plan: RunPlan, llm: Any = None) -> Agent:
    return agent_class(plan.agent)(plan, llm)

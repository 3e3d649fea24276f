"""A small in-process LLM for unit tests: answers from a list, in order, checking each call's role."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

from pytest_mlab.env import Environment
from pytest_mlab.llm.base import LLMError
from tests.env.support import make_environment, repo_project


@dataclass
class Call:
    prompt: str
    role: str
    stop: tuple[str, ...]
    purpose: str


@dataclass
class FakeLLM:
    """``responses``: plain strings answer the main role; ``(role, text)`` pairs any role; an
    exception in place of a text is raised by that call."""

    responses: list[Any]
    calls: list[Call] = field(default_factory=list)

    def complete(self, prompt: str, *, role: str = "main", stop: Sequence[str] = (), purpose: str = "") -> str:
        self.calls.append(Call(prompt, role, tuple(stop), purpose))
        if not self.responses:
            raise LLMError(f"FakeLLM ran out of responses at call {len(self.calls)} ({role}, {purpose})")
        expected, text = ("main", self.responses.pop(0)) if isinstance(self.responses[0], str) else self.responses.pop(0)
        assert role == expected, f"call {len(self.calls)} ({purpose}) asked the {role} model, expected {expected}"
        if isinstance(text, Exception):
            raise text
        return text

    def roles(self) -> list[str]:
        return [call.role for call in self.calls]


def environment(tmp_path: Path, actions: Sequence[str], llm: Any = None, human: Any = None,
                files: dict[str, str] | None = None, **kwargs: Any) -> Environment:
    env = make_environment(tmp_path, files=files, actions=tuple(actions), **kwargs)
    env.llm, env.human = llm, human
    return env


def agent_plan(name: str, **options: Any) -> SimpleNamespace:
    """What an Agent reads from its RunPlan (the agent spec), with options overridden."""
    from dataclasses import replace

    spec = repo_project().agent(name)
    return SimpleNamespace(agent=replace(spec, options={**spec.options, **options}))


def agent_actions(name: str) -> tuple[str, ...]:
    """The actions of the agent's Environment: offered in its prompt, then accepted."""
    return repo_project().agent(name).environment_actions


def response(action: str, action_input: str, *, thought: str = "next step", full: bool = True) -> str:
    """A well-formed research-agent response."""
    head = (f"Reflection: looked at the output\nResearch Plan and Status: 1. inspect **done**\n"
            f"Fact Check: none\n" if full else "")
    return f"{head}Thought: {thought}\nAction: {action}\nAction Input: {action_input}\n"

"""Agent implementations. An agent sees only the Environment, never the sandbox or the grader."""

from pytest_mlab.agents.base import Agent, load_agent

__all__ = ["Agent", "load_agent"]

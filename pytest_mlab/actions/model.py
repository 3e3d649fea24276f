"""The one check every action that asks a model makes first."""

from __future__ import annotations

from typing import Any

from pytest_mlab.errors import EnvError


def require_llm(llm: Any) -> Any:
    """``llm`` itself; an agent without a model gets an error observation instead of a crash."""
    if llm is None:
        raise EnvError("this action needs an LLM, and this run has none (use an LLM-driven agent)")
    return llm

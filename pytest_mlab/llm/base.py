"""The contract between agents/composite actions and the LLM layer.

Agents and actions depend only on this module; providers (litellm, scripted, replay, human)
implement :class:`LLM`. Every call is recorded in the trace by the session that owns the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from pytest_mlab.errors import MlabError

#: The three roles of the paper's agent: the main model, a fast one for summaries and file
#: understanding, and one for code edits.
ROLES = ("main", "fast", "edit")


@dataclass(frozen=True)
class Completion:
    """One answered call, as the trace records it."""

    text: str
    model: str  # the model string the role asked for
    role: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0  # USD; 0 when the price is unknown
    latency: float = 0.0  # seconds, retries included
    cached: bool = False  # answered from the on-disk cache, no provider call
    retries: int = 0
    note: str = ""  # what the numbers cannot say, e.g. "price unknown to litellm; cost counted as 0"
    provider_model: str = ""  # the model the provider says answered (e.g. "gpt-4-0613"); "" when offline


class TokenLimitExceeded(MlabError):
    """The prompt no longer fits the model's context: the run ends as ``token limit``."""


class LLMError(MlabError):
    """An LLM call failed (bad key, unknown model, refused request, divergent replay). Inside a
    composite action it is an error observation and the run goes on, as in the original system."""


class ProviderError(LLMError):
    """The provider itself is failing (rate limits exhausted, 5xx, connection lost, time-outs), after
    the run's attempts: the run ends as an infrastructure failure, never as the agent's."""


class BudgetExhausted(LLMError):
    """The session's --mlab-max-cost is spent: no further call is made, the run ends as ``budget spent``."""


#: The ``failure`` of an ``llm`` trace record for each kind of failed call (other failures: ``"error"``);
#: a replay raises the same kind again.
FAILURES: dict[type[MlabError], str] = {TokenLimitExceeded: "token limit", ProviderError: "provider error",
                                        BudgetExhausted: "budget spent"}


def failure_of(exc: BaseException) -> str:
    return next((label for kind, label in FAILURES.items() if isinstance(exc, kind)), "error")


class LLM(Protocol):
    """What agents and composite actions call. ``role`` picks the model; ``purpose`` labels the
    call in the trace (e.g. ``"research step"``, ``"summarise observation"``, ``"edit script"``)."""

    def complete(self, prompt: str, *, role: str = "main", stop: Sequence[str] = (),
                 purpose: str = "") -> str: ...

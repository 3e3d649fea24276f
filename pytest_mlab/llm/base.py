"""The contract between agents/composite actions and the LLM layer.

Agents and actions depend only on this module; providers (litellm, scripted, replay, human)
implement :class:`LLM`. Every call is recorded in the trace by the session that owns the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from pytest_mlab.errors import MlabError
from pytest_mlab.outcomes import EndReason

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


class TimeLimitReached(LLMError):
    """The run's max_time came before the provider answered, or leaves no time for another attempt:
    the run ends as ``timeout``, as any run out of time does. Not a :class:`ProviderError`: the run
    had its whole time, so it is the agent's result, graded, and not run again by --mlab-resume."""


#: The failed calls that end the run wherever they happen (the agent's own step, an action's call, a
#: research-log entry or an observation summary), and how it ends: asking again or going on cannot help.
RUN_ENDING: dict[type[LLMError], EndReason] = {ProviderError: EndReason.PROVIDER_ERROR,
                                               BudgetExhausted: EndReason.BUDGET_SPENT,
                                               TimeLimitReached: EndReason.TIME_LIMIT}
ENDS_RUN: tuple[type[LLMError], ...] = tuple(RUN_ENDING)

#: The ``failure`` of an ``llm`` trace record for each kind of failed call (other failures: ``"error"``);
#: a replay raises the same kind again.
FAILURES: dict[type[MlabError], str] = {TokenLimitExceeded: "token limit", ProviderError: "provider error",
                                        BudgetExhausted: "budget spent", TimeLimitReached: "time limit"}
#: The ``failure`` of a call stopped from outside while it waited: ``interrupted`` for Ctrl-C and for a
#: stop before the run's max_time, ``time limit`` for any other stop after it (the run's watchdog).
INTERRUPTED, TIME_LIMIT = "interrupted", FAILURES[TimeLimitReached]


def failure_of(exc: BaseException, *, out_of_time: bool = False) -> str:
    """The record's ``failure`` for ``exc``. ``out_of_time``: the run's max_time had passed when the
    call was stopped, so a stop that is not Ctrl-C is the run's time limit."""
    label = next((label for kind, label in FAILURES.items() if isinstance(exc, kind)), None)
    if label is not None:
        return label
    if isinstance(exc, Exception):
        return "error"
    return TIME_LIMIT if out_of_time and not isinstance(exc, KeyboardInterrupt) else INTERRUPTED


class LLM(Protocol):
    """What agents and composite actions call. ``role`` picks the model; ``purpose`` labels the
    call in the trace (e.g. ``"research step"``, ``"summarise observation"``, ``"edit script"``)."""

    def complete(self, prompt: str, *, role: str = "main", stop: Sequence[str] = (),
                 purpose: str = "") -> str: ...

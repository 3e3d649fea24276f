"""What a provider answers: one request in, one reply out. The session adds cache, timing and trace.

Providers are picked by the model string (see :mod:`pytest_mlab.llm.providers`): ``scripted:FILE``,
``replay:TRACE``, ``human``, or any litellm model name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_mlab.llm.base import Completion


@dataclass(frozen=True)
class Request:
    """One call as the provider sees it. ``model`` is the model string of the call's role."""

    model: str
    role: str
    prompt: str
    stop: tuple[str, ...] = ()
    purpose: str = ""
    temperature: float | None = None  # None: the provider's own default
    max_tokens: int | None = None
    timeout: float | None = None  # seconds per HTTP request
    #: the run's max_time as a ``time.monotonic()`` value: no attempt waits past it (None: no deadline)
    deadline: float | None = None
    api_base: str | None = None  # the server of an OpenAI-compatible model (None: litellm's choice)


class Provider(Protocol):
    #: True when identical requests may be answered from the on-disk cache (real models only:
    #: offline providers are cheap, and their answers depend on the order of calls).
    cacheable: bool
    #: True when calls cost money: the session charges each one to the session's budget first.
    billed: bool

    def answer(self, request: Request, errors: list[dict[str, Any]]) -> Completion:
        """Answer ``request``; every failed attempt is appended to ``errors`` for the trace.

        Raises :class:`~pytest_mlab.llm.base.TokenLimitExceeded` or :class:`~pytest_mlab.llm.base.LLMError`.
        """
        ...


def offline_completion(request: Request, text: str) -> Completion:
    """The answer of a provider with no tokenizer and no price: estimated tokens, cost 0."""
    return Completion(text, request.model, request.role, estimate_tokens(request.prompt), estimate_tokens(text))


def estimate_tokens(text: str) -> int:
    """Token count for providers without a tokenizer: one token per 4 characters, rounded up
    (the usual rule of thumb for English text and code with GPT-style tokenizers)."""
    return math.ceil(len(text) / 4)

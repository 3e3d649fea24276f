"""Real models through litellm: one HTTP request per attempt, bounded retries with backoff, a
context-length guard, token and cost accounting. litellm is imported on the first call, never at
import time.

litellm and the SDKs under it retry on their own (the openai SDK twice, silently). Every call here
turns that off, so that each attempt the trace lists is exactly one request to the provider.

No attempt waits past the run's deadline (its max_time): each one's time-out is cut to the time
left, and no attempt starts once the deadline has passed or the backoff would reach it. The call
then raises :class:`TimeLimitReached`, so a hanging provider ends the run as the time limit it is.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from pytest_mlab.llm.base import Completion, LLMError, ProviderError, TimeLimitReached, TokenLimitExceeded
from pytest_mlab.llm.faults import CONTEXT, TRANSIENT, MalformedReply, kind_of, retry_after
from pytest_mlab.llm.provider import Request
from pytest_mlab.llm.routing import route
from pytest_mlab.llm.secrets import api_key

BASE_DELAY = 2.0  # seconds before the second attempt; doubled each time
MAX_DELAY = 60.0  # also the most a provider's Retry-After makes us wait

#: litellm.completion arguments that leave retrying to us: one call, one HTTP request.
NO_HIDDEN_RETRIES = {"num_retries": 0, "max_retries": 0}


def load_litellm() -> Any:
    """litellm, imported on first use, without its "Provider List: ..." banners."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm


class LiteLLMProvider:
    cacheable = True
    billed = True

    def __init__(self, *, attempts: int = 5, sleep: Callable[[float], None] = time.sleep,
                 base_delay: float = BASE_DELAY, max_delay: float = MAX_DELAY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.attempts = max(1, attempts)
        self.sleep = sleep
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.clock = clock  # the clock of ``Request.deadline``

    def delay(self, attempt: int, asked: float | None = None) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based): exponential backoff,
        or the provider's Retry-After when it asks for longer, capped at ``max_delay``."""
        return min(self.max_delay, max(self.base_delay * 2 ** (attempt - 1), asked or 0.0))

    def answer(self, request: Request, errors: list[dict[str, Any]]) -> Completion:
        litellm = load_litellm()
        messages = [{"role": "user", "content": request.prompt}]
        self._check_context(litellm, request.model, messages)
        kwargs: dict[str, Any] = {"model": request.model, "messages": messages, **NO_HIDDEN_RETRIES}
        key = api_key(_provider(litellm, request.model))  # taken out of the environment (secrets.py)
        if key is not None:
            kwargs["api_key"] = key
        if request.api_base is not None:
            kwargs["api_base"] = request.api_base
        if request.stop:
            kwargs["stop"] = list(request.stop)
        for name in ("temperature", "max_tokens"):
            if getattr(request, name) is not None:
                kwargs[name] = getattr(request, name)
        for attempt in range(1, self.attempts + 1):
            timeout = self._timeout(request)
            if timeout is not None:
                kwargs["timeout"] = timeout
            try:
                return self._reply(litellm, request, litellm.completion(**kwargs), attempt - 1)
            except Exception as exc:
                errors.append(_error(attempt, exc))
                if timeout is not None and timeout != request.timeout:
                    errors[-1]["timeout"] = round(timeout, 3)  # cut short by the run's deadline
                kind = kind_of(litellm, exc)
                if kind == CONTEXT:
                    raise TokenLimitExceeded(f"the prompt ({len(request.prompt)} characters) does not fit the "
                                             f"context of {request.model}: {_short(exc)}") from None
                if kind != TRANSIENT:
                    raise _fatal(litellm, request.model, exc) from None
                last = f"{type(exc).__name__}: {_short(exc)}"
                left = self._left(request)
                if left is not None and left <= 0:
                    raise TimeLimitReached(f"the run's max_time ran out while waiting for {request.model}: "
                                           f"{_attempts(attempt)}, the last failed with {last}") from None
                if attempt == self.attempts:
                    raise ProviderError(f"{request.model} failed {self.attempts} times in a row; last error: "
                                        f"{last}") from None
                wait = self.delay(attempt, retry_after(exc))
                if left is not None and wait >= left:
                    raise TimeLimitReached(f"the run's max_time leaves {left:.1f}s, too little to wait {wait:.0f}s "
                                           f"and ask {request.model} again: {_attempts(attempt)}, the last "
                                           f"failed with {last}") from None
                errors[-1]["retry_in"] = wait
                self.sleep(wait)
            except BaseException as exc:  # stopped mid-request (the run's watchdog, Ctrl-C): listed, then passed on
                errors.append(_error(attempt, exc))
                raise
        raise AssertionError("unreachable")

    def _left(self, request: Request) -> float | None:
        """Seconds before the run's deadline (None: the run has none)."""
        return None if request.deadline is None else request.deadline - self.clock()

    def _timeout(self, request: Request) -> float | None:
        """The attempt's time-out: the role's, cut to the time left before the run's deadline.
        Raises :class:`TimeLimitReached` when none is left: the attempt is not made."""
        left = self._left(request)
        if left is None:
            return request.timeout
        if left <= 0:
            raise TimeLimitReached(f"the run's max_time had passed before {request.model} was asked")
        return left if request.timeout is None else min(request.timeout, left)

    def _check_context(self, litellm: Any, model: str, messages: list[dict[str, str]]) -> None:
        """Fail before paying for a call whose prompt cannot fit (only where the limit is known)."""
        try:
            limit = litellm.get_model_info(model).get("max_input_tokens")
        except Exception:
            return
        if not limit:
            return
        try:
            used = litellm.token_counter(model=model, messages=messages)
        except Exception:
            return
        if used > limit:
            raise TokenLimitExceeded(f"the prompt has {used} tokens, more than the {limit} that {model} accepts")

    def _reply(self, litellm: Any, request: Request, response: Any, retries: int) -> Completion:
        choices = getattr(response, "choices", None)
        if not choices:
            raise MalformedReply("the provider's reply holds no completion (no choices)")
        text = choices[0].message.content or ""  # an empty or null completion is the agent's to handle
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        note = ""
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:
            cost, note = 0.0, f"price of {request.model} unknown to litellm; cost counted as 0"
        return Completion(text, request.model, request.role, prompt_tokens, completion_tokens, cost=cost,
                          retries=retries, note=note, provider_model=str(getattr(response, "model", None) or ""))


def _provider(litellm: Any, model: str) -> str | None:
    """The provider that serves ``model``: litellm's data files, else litellm itself; None if neither knows."""
    provider = route(model).provider
    if provider is None:
        try:
            provider = litellm.get_llm_provider(model)[1]
        except Exception:  # the call itself reports an unknown model
            return None
    return provider


def _attempts(count: int) -> str:
    return "1 attempt" if count == 1 else f"{count} attempts"


def _fatal(litellm: Any, model: str, exc: BaseException) -> LLMError:
    if isinstance(exc, litellm.AuthenticationError):
        return LLMError(f"{model} rejected the API key: {_short(exc)}; check the key variable litellm names "
                        f"for this provider")
    return LLMError(f"{model} call failed: {type(exc).__name__}: {_short(exc)}")


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _error(attempt: int, exc: BaseException) -> dict[str, Any]:
    return {"attempt": attempt, "error": type(exc).__name__, "message": _short(exc, 1000)}

"""Real models through litellm: bounded retries with exponential backoff, a context-length guard,
token and cost accounting. litellm is imported on the first call, never at import time."""

from __future__ import annotations

import time
from typing import Any, Callable

from pytest_mlab.llm.base import Completion, LLMError, TokenLimitExceeded
from pytest_mlab.llm.provider import Request

BASE_DELAY = 2.0  # seconds before the second attempt; doubled each time
MAX_DELAY = 60.0


def _litellm() -> Any:
    import litellm

    litellm.suppress_debug_info = True  # no "Provider List: ..." banners in test output
    return litellm


def _retryable(litellm: Any) -> tuple[type[BaseException], ...]:
    """Transient failures: rate limits, server errors, timeouts, lost connections."""
    return (litellm.RateLimitError, litellm.InternalServerError, litellm.ServiceUnavailableError,
            litellm.Timeout, litellm.APIConnectionError)


class LiteLLMProvider:
    cacheable = True

    def __init__(self, *, attempts: int = 5, sleep: Callable[[float], None] = time.sleep,
                 base_delay: float = BASE_DELAY, max_delay: float = MAX_DELAY) -> None:
        self.attempts = max(1, attempts)
        self.sleep = sleep
        self.base_delay = base_delay
        self.max_delay = max_delay

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.max_delay, self.base_delay * 2 ** (attempt - 1))

    def answer(self, request: Request, errors: list[dict[str, Any]]) -> Completion:
        litellm = _litellm()
        messages = [{"role": "user", "content": request.prompt}]
        self._check_context(litellm, request.model, messages)
        kwargs: dict[str, Any] = {"model": request.model, "messages": messages}
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.timeout is not None:
            kwargs["timeout"] = request.timeout
        retryable = _retryable(litellm)
        for attempt in range(1, self.attempts + 1):
            try:
                response = litellm.completion(**kwargs)
            except litellm.ContextWindowExceededError as exc:
                errors.append(_error(attempt, exc))
                raise TokenLimitExceeded(f"the prompt ({len(request.prompt)} characters) does not fit the "
                                         f"context of {request.model}: {_short(exc)}") from None
            except retryable as exc:
                errors.append(_error(attempt, exc))
                if attempt == self.attempts:
                    raise LLMError(f"{request.model} failed {self.attempts} times in a row; last error: "
                                   f"{type(exc).__name__}: {_short(exc)}") from None
                errors[-1]["retry_in"] = self.delay(attempt)
                self.sleep(self.delay(attempt))
                continue
            except litellm.AuthenticationError as exc:
                errors.append(_error(attempt, exc))
                raise LLMError(f"{request.model} rejected the API key: {_short(exc)}; check the key variable "
                               f"litellm names for this provider") from None
            except Exception as exc:  # bad request, unknown model, ...: retrying will not help
                errors.append(_error(attempt, exc))
                raise LLMError(f"{request.model} call failed: {type(exc).__name__}: {_short(exc)}") from None
            return self._reply(litellm, request, response, attempt - 1)
        raise AssertionError("unreachable")

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
        choice = response.choices[0]
        text = choice.message.content or ""
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        note = ""
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:
            cost, note = 0.0, f"price of {request.model} unknown to litellm; cost counted as 0"
        return Completion(text, getattr(response, "model", None) or request.model, request.role, prompt_tokens,
                          completion_tokens, cost=cost, retries=retries, note=note)


def _short(exc: BaseException, limit: int = 300) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _error(attempt: int, exc: BaseException) -> dict[str, Any]:
    return {"attempt": attempt, "error": type(exc).__name__, "message": _short(exc, 1000)}

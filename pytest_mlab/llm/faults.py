"""What a failed litellm call means for the run: retry it, stop for the context length, or give up.

Three kinds, each ending a run differently when the attempts are spent:

- ``CONTEXT``: the prompt does not fit; the run ends as ``token limit`` (never retried).
- ``TRANSIENT``: the provider is failing (rate limits, 5xx, time-outs, lost connections, replies
  that cannot be read); retried, then the run ends as a provider error, an infrastructure failure
  (or as a timeout, when the run's max_time comes first).
- ``FATAL``: anything else (bad key, bad request, unknown model); retrying will not help.
"""

from __future__ import annotations

import email.utils
import time
from typing import Any

CONTEXT, TRANSIENT, FATAL = "context", "transient", "fatal"

#: The error code (OpenAI's, and of servers that copy its API) of a prompt too long for the model.
CONTEXT_CODE = "context_length_exceeded"


class MalformedReply(Exception):
    """The provider answered 200 with something that is not a completion (e.g. no choices)."""


def kind_of(litellm: Any, exc: BaseException) -> str:
    if isinstance(exc, litellm.ContextWindowExceededError) or CONTEXT_CODE in str(exc):
        return CONTEXT
    transient = (litellm.RateLimitError, litellm.InternalServerError, litellm.ServiceUnavailableError,
                 litellm.Timeout, litellm.APIConnectionError, MalformedReply)
    if isinstance(exc, transient):
        return TRANSIENT
    status = getattr(exc, "status_code", None)  # 502 and other 5xx that litellm maps to their own types
    return TRANSIENT if isinstance(status, int) and status >= 500 else FATAL


def retry_after(exc: BaseException, now: float | None = None) -> float | None:
    """Seconds the provider asked us to wait (``Retry-After``/``retry-after-ms``), if it said."""
    headers = _headers(exc)
    if headers is None:
        return None
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return max(0.0, float(milliseconds) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:  # an HTTP date
            when = email.utils.parsedate_to_datetime(value).timestamp()
            return max(0.0, when - (time.time() if now is None else now))
    except (TypeError, ValueError, OverflowError):
        return None


def _headers(exc: BaseException) -> Any:
    """The response headers litellm keeps on its exceptions (case-insensitive httpx.Headers)."""
    for headers in (getattr(exc, "litellm_response_headers", None),
                    getattr(getattr(exc, "response", None), "headers", None)):
        if headers and hasattr(headers, "get"):
            return headers
    return None

"""Provider faults through the real litellm path, against a fake OpenAI-compatible server on
loopback: every HTTP request the server receives is one attempt in the trace, and each fault ends
the call the way the run must end (provider error, token limit, or a plain LLM error)."""

from __future__ import annotations

import os
import time

import pytest

from pytest_mlab.env.deadline import RunTimedOut, deadline
from pytest_mlab.llm import ROLES, LLMError, ProviderError, TimeLimitReached, TokenLimitExceeded, secrets
from pytest_mlab.llm.litellm_provider import LiteLLMProvider
from pytest_mlab.llm.sampling import Sampling
from pytest_mlab.llm.session import LLMSession
from pytest_mlab.trace import TraceWriter
from tests.llm.fake_provider import CONTEXT_LENGTH_BODY, Reply
from tests.llm.session_support import llm_records

MODEL = "openai/fake-model"  # litellm's OpenAI client, with no price and no context size known


@pytest.fixture
def trace(tmp_path):
    with TraceWriter(tmp_path / "trace.jsonl") as writer:
        yield writer


class Sleeps(list):
    """The provider's backoff, recorded instead of slept."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def session(trace, sleeps: Sleeps, *, attempts: int = 3, timeout: float = 5.0,
            deadline: float | None = None) -> LLMSession:
    """``deadline``: the run's max_time, as a ``time.monotonic()`` value."""
    provider = LiteLLMProvider(attempts=attempts, sleep=sleeps)
    return LLMSession({role: MODEL for role in ROLES}, {MODEL: provider}, trace,
                      sampling={"main": Sampling(0.25, 123, timeout)}, deadline=deadline)


def only_record(trace) -> dict:
    (record,) = llm_records(trace)
    return record


def test_a_good_call_is_one_request_carrying_the_roles_sampling(server, trace):
    server.queue(Reply.answer("hello", model="fake-model-0613"))
    assert session(trace, Sleeps()).complete("hi", stop=["Observation:"]) == "hello"
    assert server.count == 1
    assert {key: server.requests[0].get(key) for key in ("temperature", "max_tokens", "stop")} == {
        "temperature": 0.25, "max_tokens": 123, "stop": ["Observation:"]}
    record = only_record(trace)
    assert (record["model"], record["provider_model"]) == (MODEL, "fake-model-0613")
    assert (record["temperature"], record["max_tokens"], record["timeout"]) == (0.25, 123, 5.0)
    assert (record["attempts"], record["retries"], record["errors"]) == (1, 0, [])


def test_a_key_taken_out_of_the_environment_is_handed_to_litellm(server, trace, monkeypatch):
    monkeypatch.setattr(secrets, "_held", {})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-held")
    secrets.take_from_environment()
    assert "OPENAI_API_KEY" not in os.environ
    assert session(trace, Sleeps()).complete("hi") == "fake answer"
    assert server.authorizations == ["Bearer sk-held"]


def test_rate_limit_waits_as_long_as_retry_after_says(server, trace):
    server.queue(Reply.error(429, "slow down", headers={"Retry-After": "7"}),
                 Reply.error(429, "slow down", headers={"Retry-After": "1"}), Reply.answer("ok"))
    sleeps = Sleeps()
    assert session(trace, sleeps).complete("hi") == "ok"
    assert sleeps == [7.0, 4.0]  # Retry-After when longer than the backoff (2 s, 4 s)
    record = only_record(trace)
    assert server.count == record["attempts"] == 3 and record["retries"] == 2
    assert [(e["attempt"], e["error"], e["retry_in"]) for e in record["errors"]] == [
        (1, "RateLimitError", 7.0), (2, "RateLimitError", 4.0)]


def test_rate_limits_that_outlast_the_attempts_are_a_provider_error(server, trace):
    server.default = Reply.error(429, "slow down", headers={"Retry-After": "1"})
    with pytest.raises(ProviderError, match="fake-model failed 3 times in a row; last error: RateLimitError"):
        session(trace, Sleeps()).complete("hi")
    record = only_record(trace)
    assert server.count == record["attempts"] == len(record["errors"]) == 3
    assert record["completion"] is None and record["failure"] == "provider error"
    assert "retry_in" not in record["errors"][-1]  # no wait after the last attempt


def test_a_burst_of_5xx_is_retried_one_request_per_attempt(server, trace):
    server.queue(*(Reply.error(status) for status in (500, 502, 503, 504)), Reply.answer("back"))
    sleeps = Sleeps()
    assert session(trace, sleeps, attempts=5).complete("hi") == "back"
    record = only_record(trace)
    assert server.count == record["attempts"] == 5 and sleeps == [2.0, 4.0, 8.0, 16.0]
    assert [e["error"] for e in record["errors"]] == ["InternalServerError", "BadGatewayError",
                                                      "ServiceUnavailableError", "Timeout"]


def test_5xx_outlasting_the_attempts_is_a_provider_error(server, trace):
    server.default = Reply.error(503, "overloaded")
    with pytest.raises(ProviderError, match="ServiceUnavailableError"):
        session(trace, Sleeps(), attempts=2).complete("hi")
    assert server.count == only_record(trace)["attempts"] == 2


def test_a_stalled_reply_times_out_and_ends_as_a_provider_error(server, trace):
    server.default = Reply.stalled(30)  # released when the server stops
    with pytest.raises(ProviderError, match="Timeout"):
        session(trace, Sleeps(), attempts=2, timeout=0.2).complete("hi")
    record = only_record(trace)
    assert server.count == record["attempts"] == 2
    assert [e["error"] for e in record["errors"]] == ["Timeout", "Timeout"] and record["timeout"] == 0.2


def test_a_stall_then_an_answer_is_two_attempts(server, trace):
    server.queue(Reply.stalled(30), Reply.answer("late but fine"))
    assert session(trace, Sleeps(), timeout=0.2).complete("hi") == "late but fine"
    assert server.count == only_record(trace)["attempts"] == 2


@pytest.mark.parametrize("broken", [Reply.malformed(), Reply.answer(choices=False),
                                    Reply(200, b"<html>proxy error</html>", {"Content-Type": "text/html"})],
                         ids=["cut-off-json", "no-choices", "html"])
def test_unreadable_replies_are_retried_then_a_provider_error(server, trace, broken):
    server.queue(broken, Reply.answer("readable"))
    assert session(trace, Sleeps()).complete("hi") == "readable"
    assert server.count == only_record(trace)["attempts"] == 2
    server.default = broken
    with pytest.raises(ProviderError):
        session(trace, Sleeps(), attempts=2).complete("hi")
    assert server.count == 4 and llm_records(trace)[-1]["attempts"] == 2


def test_context_length_error_is_a_token_limit_after_one_request(server, trace):
    server.queue(Reply.error(400, body=CONTEXT_LENGTH_BODY))
    sleeps = Sleeps()
    with pytest.raises(TokenLimitExceeded, match="does not fit the context of openai/fake-model"):
        session(trace, sleeps).complete("a long prompt")
    record = only_record(trace)
    assert server.count == record["attempts"] == 1 and sleeps == []
    assert record["failure"] == "token limit" and record["completion"] is None


@pytest.mark.parametrize("text", ["", None], ids=["empty", "null"])
def test_an_empty_completion_is_returned_as_it_is(server, trace, text):
    server.queue(Reply.answer(text))
    assert session(trace, Sleeps()).complete("hi") == ""
    record = only_record(trace)
    assert server.count == record["attempts"] == 1 and record["completion"] == "" and "failure" not in record


@pytest.mark.parametrize("status, message", [(401, "rejected the API key"), (404, "NotFoundError"),
                                             (400, "BadRequestError")])
def test_auth_unknown_model_and_bad_request_are_plain_llm_errors_not_retried(server, trace, status, message):
    server.queue(Reply.error(status, "no"))
    with pytest.raises(LLMError, match=message) as raised:
        session(trace, Sleeps()).complete("hi")
    assert not isinstance(raised.value, ProviderError)
    record = only_record(trace)
    assert server.count == record["attempts"] == 1 and record["failure"] == "error"


def test_an_attempt_waits_no_longer_than_the_run_has_left_and_the_call_ends_as_a_time_limit(server, trace):
    server.default = Reply.stalled(30)
    sleeps = Sleeps()
    with pytest.raises(TimeLimitReached, match="the run's max_time ran out while waiting for openai/fake-model: "
                                               "1 attempt, the last failed with Timeout"):
        session(trace, sleeps, attempts=2, timeout=4.0, deadline=time.monotonic() + 0.5).complete("hi")
    record = only_record(trace)
    assert server.count == record["attempts"] == 1 and sleeps == []  # no retry once the deadline has passed
    (error,) = record["errors"]
    assert error["error"] == "Timeout" and 0 < error["timeout"] <= 0.5 and record["timeout"] == 4.0
    assert record["failure"] == "time limit" and record["prompt"] == "hi" and record["completion"] is None


def test_no_retry_starts_when_the_wait_before_it_would_reach_the_deadline(server, trace):
    server.default = Reply.error(429, "slow down", headers={"Retry-After": "30"})
    sleeps = Sleeps()
    with pytest.raises(TimeLimitReached, match=r"too little to wait 30s and ask openai/fake-model again: 1 attempt"):
        session(trace, sleeps, deadline=time.monotonic() + 20).complete("hi")
    record = only_record(trace)
    assert server.count == record["attempts"] == 1 and sleeps == [] and record["failure"] == "time limit"
    assert "retry_in" not in record["errors"][0]


def test_a_call_once_the_deadline_has_passed_sends_no_request(server, trace):
    with pytest.raises(TimeLimitReached, match="the run's max_time had passed before openai/fake-model was asked"):
        session(trace, Sleeps(), deadline=time.monotonic() - 1).complete("hi")
    record = only_record(trace)
    assert server.count == record["attempts"] == 0 and record["failure"] == "time limit"


def test_a_call_with_time_left_retries_as_usual(server, trace):
    server.queue(Reply.error(503, "overloaded"), Reply.answer("back"))
    sleeps = Sleeps()
    assert session(trace, sleeps, deadline=time.monotonic() + 3600).complete("hi") == "back"
    record = only_record(trace)
    assert server.count == record["attempts"] == 2 and sleeps == [2.0]
    assert "timeout" not in record["errors"][0]  # the role's own time-out, not cut by the deadline


def test_a_call_the_watchdog_stops_mid_request_leaves_its_record(server, trace):
    """The run's watchdog (SIGALRM) raises inside litellm's HTTP read: the record is still written,
    with the prompt, the attempt it cut short and how long the call waited."""
    server.default = Reply.stalled(30)
    with pytest.raises(RunTimedOut), deadline(0.3):
        session(trace, Sleeps(), timeout=20.0).complete("the prompt")
    record = only_record(trace)
    assert server.count == record["attempts"] == 1
    assert [error["error"] for error in record["errors"]] == ["RunTimedOut"]
    assert record["failure"] == "interrupted" and record["completion"] is None and record["prompt"] == "the prompt"
    assert record["message"].startswith("stopped while waiting for openai/fake-model (RunTimedOut: the agent was "
                                        "stopped after")
    assert record["latency"] > 0

"""The session over real providers and a fake litellm boundary: retries with a fake clock, faults,
context guard, cost, cache, the budget, and the trace records of every call."""

from __future__ import annotations

import hashlib
import importlib
import json
from types import ModuleType

import pytest

from pytest_mlab.llm import BudgetExhausted, LLMError, ProviderError, TimeLimitReached, TokenLimitExceeded
from pytest_mlab.llm.cache import ResponseCache
from pytest_mlab.llm.litellm_provider import LiteLLMProvider
from pytest_mlab.llm.sampling import DEFAULT_SAMPLING, Sampling, sampling_for
from pytest_mlab.llm.scripted import ScriptedProvider
from pytest_mlab.llm.session import LLMSession
from pytest_mlab.results.budget import Budget, Ledger
from pytest_mlab.trace import TraceWriter
from tests.llm.session_support import llm_records

litellm: ModuleType  # bound by the fixture below, at the first test of this module


@pytest.fixture(autouse=True)
def _import_litellm() -> None:
    """litellm is imported by the tests, not at collection: every xdist worker collects this module,
    and importing litellm there cost about 7 s of each worker's collection."""
    global litellm
    litellm = importlib.import_module("litellm")


MODEL = "gpt-4"  # known to litellm's bundled price map: cost and context size are real


def response(text: str, prompt_tokens: int = 10, completion_tokens: int = 5, model: str = MODEL):
    return litellm.ModelResponse(choices=[{"message": {"content": text, "role": "assistant"}, "index": 0,
                                           "finish_reason": "stop"}], model=model,
                                 usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                        "total_tokens": prompt_tokens + completion_tokens})


FAULTS = {
    "rate limit": lambda: litellm.RateLimitError("slow down", llm_provider="openai", model=MODEL),
    "500": lambda: litellm.InternalServerError("boom", llm_provider="openai", model=MODEL),
    "503": lambda: litellm.ServiceUnavailableError("busy", llm_provider="openai", model=MODEL),
    "502": lambda: litellm.BadGatewayError("bad gateway", llm_provider="openai", model=MODEL),
    "timeout": lambda: litellm.Timeout("took too long", model=MODEL, llm_provider="openai"),
    "connection": lambda: litellm.APIConnectionError("reset", llm_provider="openai", model=MODEL),
}


class FakeLiteLLM:
    """Stands in for ``litellm.completion``: raises the queued faults, then answers."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.calls: list[dict] = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def trace(tmp_path):
    with TraceWriter(tmp_path / "trace.jsonl") as writer:
        yield writer


def real_session(trace, clock, cache=None, attempts=5, **sampling) -> LLMSession:
    """``sampling``: role -> Sampling, over the defaults."""
    provider = LiteLLMProvider(attempts=attempts, sleep=clock.sleep)
    return LLMSession({"main": MODEL, "fast": MODEL, "edit": MODEL}, {MODEL: provider}, trace, clock=clock,
                      cache=cache, sampling=sampling)


def test_call_passes_prompt_stop_and_options_and_records_tokens_and_cost(monkeypatch, trace, clock):
    fake = FakeLiteLLM(response("Action: List Files", 12, 4, model="gpt-4-0613"))
    monkeypatch.setattr(litellm, "completion", fake)
    session = real_session(trace, clock, fast=Sampling(0.0, 300, 20.0))
    trace.current_step = 7  # the Environment advances it; the session files its calls under it
    assert session.complete("hello", role="fast", stop=["Observation:"], purpose="summary") == "Action: List Files"
    assert fake.calls == [{"model": MODEL, "messages": [{"role": "user", "content": "hello"}],
                           "num_retries": 0, "max_retries": 0, "stop": ["Observation:"], "temperature": 0.0,
                           "max_tokens": 300, "timeout": 20.0}]
    (record,) = llm_records(trace)
    expected_cost = litellm.completion_cost(completion_response=response("x", 12, 4, model="gpt-4-0613"))
    assert expected_cost > 0
    assert {k: record[k] for k in ("step", "role", "model", "purpose", "prompt", "completion", "prompt_tokens",
                                   "completion_tokens", "cached", "retries", "errors")} == {
        "step": 7, "role": "fast", "model": MODEL, "purpose": "summary", "prompt": "hello",
        "completion": "Action: List Files", "prompt_tokens": 12, "completion_tokens": 4, "cached": False,
        "retries": 0, "errors": []}
    assert (record["provider_model"], record["attempts"]) == ("gpt-4-0613", 1)
    assert (record["temperature"], record["max_tokens"], record["timeout"]) == (0.0, 300, 20.0)
    assert record["cost"] == pytest.approx(expected_cost)
    assert (session.total_tokens, session.total_cost) == (16, pytest.approx(expected_cost))


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_transient_faults_are_retried_with_exponential_backoff_and_logged(monkeypatch, trace, clock, fault):
    monkeypatch.setattr(litellm, "completion", FakeLiteLLM(FAULTS[fault](), FAULTS[fault](), response("ok")))
    session = real_session(trace, clock)
    assert session.complete("hi") == "ok"
    assert clock.sleeps == [2.0, 4.0]  # no real sleeping: the fake clock advances
    (record,) = llm_records(trace)
    assert record["retries"] == 2 and record["latency"] == 6.0
    assert [e["attempt"] for e in record["errors"]] == [1, 2]
    assert record["errors"][0]["error"] == type(FAULTS[fault]()).__name__
    assert record["errors"][0]["retry_in"] == 2.0


def test_backoff_is_capped_and_attempts_are_bounded(monkeypatch, trace, clock):
    monkeypatch.setattr(litellm, "completion", FakeLiteLLM(*[FAULTS["rate limit"]() for _ in range(8)]))
    session = real_session(trace, clock, attempts=8)
    with pytest.raises(ProviderError, match=r"gpt-4 failed 8 times in a row; last error: RateLimitError"):
        session.complete("hi")
    assert clock.sleeps == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    (record,) = llm_records(trace)
    assert record["completion"] is None and record["failure"] == "provider error" and len(record["errors"]) == 8
    assert record["attempts"] == 8
    assert session.completions == []  # a failed call adds nothing to the totals


def test_context_window_error_is_a_token_limit_not_retried(monkeypatch, trace, clock):
    fault = litellm.ContextWindowExceededError("maximum context length is 8192", model=MODEL, llm_provider="openai")
    fake = FakeLiteLLM(fault)
    monkeypatch.setattr(litellm, "completion", fake)
    with pytest.raises(TokenLimitExceeded, match="does not fit the context of gpt-4"):
        real_session(trace, clock).complete("hi")
    assert len(fake.calls) == 1 and clock.sleeps == []
    assert llm_records(trace)[0]["failure"] == "token limit"


def test_prompt_longer_than_the_model_context_fails_before_any_call(monkeypatch, trace, clock):
    fake = FakeLiteLLM(response("never"))
    monkeypatch.setattr(litellm, "completion", fake)
    with pytest.raises(TokenLimitExceeded, match=r"more than the 8192 that gpt-4 accepts"):
        real_session(trace, clock).complete("word " * 20000)
    assert fake.calls == []


def test_other_provider_errors_are_not_retried(monkeypatch, trace, clock):
    bad_key = litellm.AuthenticationError("invalid api key", llm_provider="openai", model=MODEL)
    monkeypatch.setattr(litellm, "completion", FakeLiteLLM(bad_key))
    with pytest.raises(LLMError, match="rejected the API key"):
        real_session(trace, clock).complete("hi")
    assert clock.sleeps == []


def test_unknown_price_counts_zero_with_a_note(monkeypatch, trace, clock):
    monkeypatch.setattr(litellm, "completion", FakeLiteLLM(response("ok", model="my-local-model")))
    provider = LiteLLMProvider(sleep=clock.sleep)
    session = LLMSession({"main": "my-local-model"}, {"my-local-model": provider}, trace, clock=clock)
    session.complete("hi")
    (record,) = llm_records(trace)
    assert record["cost"] == 0 and "price of my-local-model unknown" in record["note"]


def test_cache_hit_costs_nothing_and_is_marked(monkeypatch, trace, clock, tmp_path):
    fake = FakeLiteLLM(response("first", 10, 5), response("second", 10, 5))
    monkeypatch.setattr(litellm, "completion", fake)
    cache = ResponseCache(tmp_path / "cache")
    first = real_session(trace, clock, cache=cache, main=Sampling(0.0, 2000, 300))
    assert first.complete("same prompt", stop=["X"]) == "first"
    second = real_session(trace, clock, cache=cache, main=Sampling(0.0, 2000, 60))  # timeout is not in the key
    assert second.complete("same prompt", stop=["X"]) == "first"  # from the cache
    assert len(fake.calls) == 1
    miss, hit = llm_records(trace)
    assert (miss["cached"], hit["cached"]) == (False, True)
    assert miss["cost"] > 0 and hit["cost"] == 0 and second.total_cost == 0
    assert hit["prompt_tokens"] == 10 and hit["completion"] == "first"
    # any part of the key changing is a miss
    assert real_session(trace, clock, cache=cache).complete("same prompt", stop=["X"]) == "second"
    assert len(fake.calls) == 2
    files = list((tmp_path / "cache").rglob("*.json"))
    assert len(files) == 2 and not list((tmp_path / "cache").rglob(".tmp-*"))
    assert json.loads(files[0].read_text())["prompt"] == "same prompt"


def test_a_corrupt_cache_entry_is_a_miss(monkeypatch, trace, clock, tmp_path):
    monkeypatch.setattr(litellm, "completion", FakeLiteLLM(response("fresh")))
    cache = ResponseCache(tmp_path / "cache")
    session = real_session(trace, clock, cache=cache)
    from pytest_mlab.llm.provider import Request

    main = DEFAULT_SAMPLING["main"]
    path = cache._path(cache.key(Request(MODEL, "main", "p", temperature=main.temperature, max_tokens=main.max_tokens)))
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert session.complete("p") == "fresh"


def test_unknown_role_is_an_llm_error(trace, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- one\n")
    session = LLMSession({"main": "scripted:s"}, {"scripted:s": ScriptedProvider(script)}, trace)
    with pytest.raises(LLMError, match="unknown LLM role 'boss'; the roles are main, fast, edit"):
        session.complete("x", role="boss")


def test_offline_providers_estimate_tokens_and_cost_nothing(trace, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- 12345678\n")
    session = LLMSession({"main": "scripted:s"}, {"scripted:s": ScriptedProvider(script)}, trace)
    session.complete("a" * 41)
    (record,) = llm_records(trace)
    assert (record["prompt_tokens"], record["completion_tokens"], record["cost"]) == (11, 2, 0)


# ---------------------------------------------------------------- budget

def test_each_paid_call_is_charged_and_the_call_after_the_limit_is_refused(monkeypatch, trace, clock, tmp_path):
    one = litellm.completion_cost(completion_response=response("x"))
    fake = FakeLiteLLM(*[response("x") for _ in range(4)])
    monkeypatch.setattr(litellm, "completion", fake)
    ledger = Ledger(tmp_path)
    session = LLMSession({"main": MODEL}, {MODEL: LiteLLMProvider(sleep=clock.sleep)}, trace, clock=clock,
                         budget=Budget(ledger, 2.5 * one, "toy[run]"))
    for _ in range(3):
        session.complete("hi")
    with pytest.raises(BudgetExhausted, match=r"reached --mlab-max-cost=\$.*; no further LLM call is made"):
        session.complete("hi")
    assert len(fake.calls) == 3
    assert ledger.spent() == pytest.approx(3 * one) == session.total_cost
    refused = llm_records(trace)[-1]
    assert (refused["failure"], refused["attempts"], refused["completion"]) == ("budget spent", 0, None)


def test_a_failed_call_releases_its_reservation_and_costs_nothing(monkeypatch, trace, clock, tmp_path):
    bad_key = litellm.AuthenticationError("invalid api key", llm_provider="openai", model=MODEL)
    monkeypatch.setattr(litellm, "completion", FakeLiteLLM(bad_key))
    ledger = Ledger(tmp_path)
    session = LLMSession({"main": MODEL}, {MODEL: LiteLLMProvider(sleep=clock.sleep)}, trace, clock=clock,
                         budget=Budget(ledger, 1.0, "toy[run]"))
    with pytest.raises(LLMError):
        session.complete("hi")
    spending = ledger.spending()
    assert (spending.spent, spending.calls, spending.holds) == (0.0, 1, {})


def test_free_calls_are_not_charged_even_when_the_budget_is_spent(trace, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- free\n")
    spent = Budget(Ledger(tmp_path), 0.0, "toy[run]")
    session = LLMSession({"main": "scripted:s"}, {"scripted:s": ScriptedProvider(script)}, trace, budget=spent)
    assert session.complete("x") == "free"
    assert not Ledger(tmp_path).path.exists()


def test_records_carry_the_sampling_even_for_offline_providers(trace, tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("- a\n- b\n")
    session = LLMSession({"main": "scripted:s", "edit": "scripted:s"}, {"scripted:s": ScriptedProvider(script)},
                         trace, sampling=sampling_for({"sampling": {"edit": {"timeout": 60}}}))
    session.complete("x")
    session.complete("y", role="edit")
    main, edit = llm_records(trace)
    assert [(r["temperature"], r["max_tokens"], r["timeout"]) for r in (main, edit)] == [(0.5, 2000, 300.0),
                                                                                          (0.5, 4000, 60)]
    assert main["provider_model"] is None and main["attempts"] == 1


# ---------------------------------------------------------------- the run's deadline, and stops from outside

def deadline_session(trace, clock, *, left: float, attempts: int = 5) -> LLMSession:
    """A session whose run has ``left`` seconds before its max_time, on the fake clock."""
    provider = LiteLLMProvider(attempts=attempts, sleep=clock.sleep, clock=clock)
    return LLMSession({"main": MODEL, "fast": MODEL, "edit": MODEL}, {MODEL: provider}, trace, clock=clock,
                      deadline=clock.now + left)


def test_each_attempt_gets_at_most_the_time_the_run_has_left(monkeypatch, trace, clock):
    fake = FakeLiteLLM(FAULTS["timeout"](), FAULTS["rate limit"](), response("ok"))
    monkeypatch.setattr(litellm, "completion", fake)
    assert deadline_session(trace, clock, left=1000.0).complete("hi") == "ok"  # the role's time-out is 300 s
    clock.now += 990.0  # the next call comes with 10 s left; it waits 2 s after its first failure
    fake.outcomes = [FAULTS["500"](), response("late")]
    session = deadline_session(trace, clock, left=10.0)
    assert session.complete("hi") == "late"
    assert [call["timeout"] for call in fake.calls] == [300.0, 300.0, 300.0, 10.0, 8.0]
    assert [error["timeout"] for error in llm_records(trace)[-1]["errors"]] == [10.0]


def test_attempts_that_outlast_the_deadline_end_as_a_time_limit_not_a_provider_error(monkeypatch, trace, clock):
    def stalls(**kwargs):  # the provider never answers: each attempt takes its whole time-out
        clock.now += kwargs["timeout"]
        raise FAULTS["timeout"]()

    monkeypatch.setattr(litellm, "completion", stalls)
    with pytest.raises(TimeLimitReached, match="the run's max_time ran out while waiting for gpt-4: 1 attempt, "
                                               "the last failed with Timeout"):
        deadline_session(trace, clock, left=100.0).complete("hi")
    (record,) = llm_records(trace)
    assert (record["failure"], record["attempts"], record["latency"]) == ("time limit", 1, 100.0)
    assert clock.sleeps == []


class Stops:
    """A provider stopped from outside while it waits: the clock moves on by ``waited``, then ``stop`` is raised."""

    cacheable = billed = False

    def __init__(self, clock: FakeClock, stop: BaseException, waited: float) -> None:
        self.clock, self.stop, self.waited = clock, stop, waited

    def answer(self, request, errors):
        self.clock.now += self.waited
        raise self.stop


class WatchdogFired(BaseException):
    """Stands in for the run's watchdog (pytest_mlab.env.deadline.RunTimedOut): a BaseException."""


@pytest.mark.parametrize("stop, waited, failure", [
    (WatchdogFired("the agent was stopped after 66s"), 66.0, "time limit"),  # after the run's max_time
    (WatchdogFired("stopped"), 30.0, "interrupted"),  # before it: stopped from outside
    (KeyboardInterrupt(), 66.0, "interrupted"),  # Ctrl-C is Ctrl-C, whenever it comes
])
def test_a_call_stopped_from_outside_leaves_a_record_saying_how_it_ended(trace, clock, stop, waited, failure):
    session = LLMSession({"main": "plugin:m"}, {"plugin:m": Stops(clock, stop, waited)}, trace, clock=clock,
                         deadline=clock.now + 60.0)
    with pytest.raises(type(stop)):
        session.complete("the prompt", purpose="agent step")
    (record,) = llm_records(trace)
    assert (record["failure"], record["prompt"], record["purpose"], record["latency"]) == (
        failure, "the prompt", "agent step", waited)
    assert record["completion"] is None and record["attempts"] == 0
    assert record["message"] == f"stopped while waiting for plugin:m ({type(stop).__name__}" + (
        f": {stop})" if str(stop) else ")")
    assert session.completions == []


def test_the_cache_keeps_answers_of_different_servers_apart():
    """Two servers may serve different models under one name; a spec without api_base keeps the keys
    that caches written before it had."""
    from pytest_mlab.llm.provider import Request

    plain = Request("openai/llama", "main", "prompt", ("Observation:",), temperature=0.5, max_tokens=10)
    here = Request("openai/llama", "main", "prompt", ("Observation:",), temperature=0.5, max_tokens=10,
                   api_base="http://127.0.0.1:8000/v1")
    there = Request("openai/llama", "main", "prompt", ("Observation:",), temperature=0.5, max_tokens=10,
                    api_base="http://127.0.0.1:9000/v1")
    assert len({ResponseCache.key(plain), ResponseCache.key(here), ResponseCache.key(there)}) == 3
    identity = ["openai/llama", "prompt", ["Observation:"], 0.5, 10]
    assert ResponseCache.key(plain) == hashlib.sha256(json.dumps(identity).encode("utf-8")).hexdigest()

"""The LLM of one run: routes each role to its model's provider with the role's sampling, charges
paid calls to the session's budget, records every call in the trace and keeps the run's token and
cost totals. Agents and composite actions see only ``complete``.

Every call leaves its record, also one stopped while it waited (the run's watchdog, Ctrl-C): the
trace then still shows the prompt, the attempts and how long it waited, and how it ended."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Mapping, Protocol, Sequence

from pytest_mlab.llm.base import ROLES, BudgetExhausted, Completion, LLMError, failure_of
from pytest_mlab.llm.cache import ResponseCache
from pytest_mlab.llm.options import api_bases
from pytest_mlab.llm.provider import Provider, Request
from pytest_mlab.llm.sampling import DEFAULT_SAMPLING, Sampling, sampling_for

#: Attempts per call (each one HTTP request) when the agent spec sets no ``llm_attempts``.
DEFAULT_ATTEMPTS = 5


class Budget(Protocol):
    """The session's --mlab-max-cost as one run sees it (``pytest_mlab.results.budget.Budget``)."""

    def reserve(self) -> Any:
        """A reservation for one call, or None once the budget is spent."""
        ...

    def settle(self, hold: Any, cost: float) -> None: ...

    def refusal(self) -> str: ...


class LLMSession:
    """Implements :class:`pytest_mlab.llm.base.LLM` for one run.

    Each call is recorded under the trace's ``current_step``: calls before a step and inside its
    composite action belong to that step.

    ``deadline``: the run's max_time as a value of ``clock`` (the runner sets it when the run
    starts); providers wait no longer (see :mod:`litellm_provider`). ``api_bases``: model string ->
    the OpenAI-compatible server that serves it (the agent spec's ``options: api_base:``).
    """

    def __init__(self, models: Mapping[str, str], providers: Mapping[str, Provider], trace: Any, *,
                 sampling: Mapping[str, Sampling] | None = None, budget: Budget | None = None,
                 cache: ResponseCache | None = None, clock: Callable[[], float] = time.monotonic,
                 deadline: float | None = None, api_bases: Mapping[str, str] | None = None) -> None:
        self.models = dict(models)
        self.providers = dict(providers)
        self.trace = trace
        self.sampling = {**DEFAULT_SAMPLING, **(sampling or {})}
        self.budget = budget
        self.cache = cache
        self.clock = clock
        self.deadline = deadline
        self.api_bases = dict(api_bases or {})
        self.completions: list[Completion] = []

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.completions)

    @property
    def completion_tokens(self) -> int:
        return sum(c.completion_tokens for c in self.completions)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def total_cost(self) -> float:
        return sum(c.cost for c in self.completions)

    def complete(self, prompt: str, *, role: str = "main", stop: Sequence[str] = (), purpose: str = "") -> str:
        if role not in ROLES:
            raise LLMError(f"unknown LLM role {role!r}; the roles are {', '.join(ROLES)}")
        if not isinstance(prompt, str):
            raise LLMError(f"the prompt must be a string, got {type(prompt).__name__}")
        sampling = self.sampling[role]
        model = self.models[role]
        request = Request(model, role, prompt, tuple(stop), purpose, sampling.temperature, sampling.max_tokens,
                          sampling.timeout, deadline=self.deadline, api_base=self.api_bases.get(model))
        errors: list[dict[str, Any]] = []
        started = self.clock()
        try:
            answer = self._ask(self.providers[request.model], request, errors)
        except BaseException as exc:  # also the run's watchdog and Ctrl-C: the record is written, then they go on
            failed = Completion("", request.model, role, retries=len(errors), latency=self.clock() - started)
            self._record(request, failed, errors, attempts=len(errors), failure=exc)
            raise
        # a cached answer costs nothing; its latency is the cache lookup
        completion = replace(answer, latency=round(self.clock() - started, 6), cost=0.0 if answer.cached else answer.cost)
        self._record(request, completion, errors, attempts=0 if answer.cached else len(errors) + 1)
        self.completions.append(completion)
        return completion.text

    def _ask(self, provider: Provider, request: Request, errors: list[dict[str, Any]]) -> Completion:
        """The cached answer, else the provider's; a paid call is charged to the budget first."""
        cacheable = self.cache is not None and provider.cacheable
        answer = self.cache.get(request) if cacheable else None
        if answer is not None:
            return answer
        hold = self._reserve() if self.budget is not None and provider.billed else None
        cost = 0.0
        try:
            answer = provider.answer(request, errors)
            cost = answer.cost
        finally:
            if hold is not None:  # also when the call failed or the run was stopped during it
                self.budget.settle(hold, cost)
        if cacheable:
            self.cache.put(request, answer)
        return answer

    def _reserve(self) -> Any:
        hold = self.budget.reserve()
        if hold is None:
            raise BudgetExhausted(self.budget.refusal())
        return hold

    def _record(self, request: Request, completion: Completion, errors: list[dict[str, Any]], *, attempts: int,
                failure: BaseException | None = None) -> None:
        """``attempts``: the requests made to the provider (one HTTP request each for real models, the
        one a stop cut short included; 0 for a cache hit or a call refused before any request)."""
        record = {"type": "llm", "step": self.trace.current_step, "role": request.role, "model": request.model,
                  "provider_model": completion.provider_model or None, "purpose": request.purpose,
                  "prompt": request.prompt, "completion": None if failure else completion.text,
                  "stop": list(request.stop), "temperature": request.temperature, "max_tokens": request.max_tokens,
                  "timeout": request.timeout, "prompt_tokens": completion.prompt_tokens,
                  "completion_tokens": completion.completion_tokens, "cost": completion.cost,
                  "latency": round(completion.latency, 6), "cached": completion.cached, "attempts": attempts,
                  "retries": completion.retries, "errors": errors}
        if completion.note:
            record["note"] = completion.note
        if failure is not None:
            out_of_time = self.deadline is not None and self.clock() >= self.deadline
            record["failure"] = failure_of(failure, out_of_time=out_of_time)
            record["message"] = str(failure) if isinstance(failure, Exception) else _stopped(request, failure)
        self.trace.write(record)


def _stopped(request: Request, stop: BaseException) -> str:
    """The message of a call stopped from outside while it waited."""
    why = f"{type(stop).__name__}: {stop}" if str(stop) else type(stop).__name__
    return f"stopped while waiting for {request.model} ({why})"


def open_session(plan: Any, trace: Any, *, console: Any = None, budget: Budget | None = None) -> LLMSession:
    """The session for a run plan whose agent uses an LLM (``plan.llms`` is not empty). The agent
    spec's LLM options were checked against its class's options schema when it was collected.
    ``budget``: the session's --mlab-max-cost, when one is set."""
    from pytest_mlab.llm.providers import make_providers, resolve_models

    options = plan.agent.options
    models = resolve_models(plan.llms, plan.invocation_dir)
    providers = make_providers(models, task=plan.task.name, console=console,
                               attempts=options.get("llm_attempts", DEFAULT_ATTEMPTS))
    return LLMSession(models, providers, trace, sampling=sampling_for(options), budget=budget,
                      cache=ResponseCache(plan.llm_cache) if plan.llm_cache else None, api_bases=api_bases(options))


def human_helper(session: LLMSession | None) -> Callable[[str], str] | None:
    """The Request Help callable: present only when a human is at the terminal (some role is ``human``)."""
    if session is None:
        return None
    from pytest_mlab.llm.human import HumanProvider

    human = next((p for p in session.providers.values() if isinstance(p, HumanProvider)), None)
    return human.console.help if human else None

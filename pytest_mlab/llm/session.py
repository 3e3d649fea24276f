"""The LLM of one run: routes each role to its model's provider, records every call in the trace
and keeps the run's token and cost totals. Agents and composite actions see only ``complete``."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from pytest_mlab.llm.base import ROLES, Completion, LLMError, TokenLimitExceeded
from pytest_mlab.llm.cache import ResponseCache
from pytest_mlab.llm.provider import Provider, Request


class LLMSession:
    """Implements :class:`pytest_mlab.llm.base.LLM` for one run.

    Each call is recorded under the trace's ``current_step``: calls before a step and inside its
    composite action belong to that step.
    """

    def __init__(self, models: Mapping[str, str], providers: Mapping[str, Provider], trace: Any, *,
                 temperature: float | None = None, max_tokens: int | None = None, timeout: float | None = None,
                 cache: ResponseCache | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.models = dict(models)
        self.providers = dict(providers)
        self.trace = trace
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.cache = cache
        self.clock = clock
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
        request = Request(self.models[role], role, prompt, tuple(stop), purpose, self.temperature,
                          self.max_tokens, self.timeout)
        provider = self.providers[request.model]
        errors: list[dict[str, Any]] = []
        started = self.clock()
        try:
            answer = self.cache.get(request) if self.cache is not None and provider.cacheable else None
            if answer is None:
                answer = provider.answer(request, errors)
                if self.cache is not None and provider.cacheable:
                    self.cache.put(request, answer)
        except (LLMError, TokenLimitExceeded) as exc:
            failed = Completion("", request.model, role, retries=len(errors), latency=self.clock() - started)
            self._record(request, failed, errors, failure=exc)
            raise
        # a cached answer costs nothing; its latency is the cache lookup
        completion = replace(answer, latency=round(self.clock() - started, 6), cost=0.0 if answer.cached else answer.cost)
        self._record(request, completion, errors)
        self.completions.append(completion)
        return completion.text

    def _record(self, request: Request, completion: Completion, errors: list[dict[str, Any]],
                failure: Exception | None = None) -> None:
        record = {"type": "llm", "step": self.trace.current_step, "role": request.role, "model": completion.model,
                  "purpose": request.purpose, "prompt": request.prompt,
                  "completion": None if failure else completion.text, "stop": list(request.stop),
                  "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
                  "cost": completion.cost, "latency": round(completion.latency, 6), "cached": completion.cached,
                  "retries": completion.retries, "errors": errors}
        if completion.note:
            record["note"] = completion.note
        if failure is not None:
            record["failure"] = "token limit" if isinstance(failure, TokenLimitExceeded) else "error"
            record["message"] = str(failure)
        self.trace.write(record)


def open_session(plan: Any, trace: Any, *, console: Any = None) -> LLMSession:
    """The session for a run plan whose agent uses an LLM (``plan.llms`` is not empty). The agent
    spec's LLM options were checked against its class's options schema when it was collected."""
    from pytest_mlab.llm.providers import make_providers, resolve_models

    options = plan.agent.options
    models = resolve_models(plan.llms, plan.invocation_dir)
    providers = make_providers(models, task=plan.task.name, console=console, attempts=options.get("llm_attempts", 5))
    return LLMSession(models, providers, trace, temperature=options.get("temperature"),
                      max_tokens=options.get("max_tokens"), timeout=options.get("llm_timeout"),
                      cache=ResponseCache(plan.llm_cache) if plan.llm_cache else None)


def human_helper(session: LLMSession | None) -> Callable[[str], str] | None:
    """The Request Help callable: present only when a human is at the terminal (some role is ``human``)."""
    if session is None:
        return None
    from pytest_mlab.llm.human import HumanProvider

    human = next((p for p in session.providers.values() if isinstance(p, HumanProvider)), None)
    return human.console.help if human else None

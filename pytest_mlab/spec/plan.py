"""Compile a Task spec and the session's settings into run plans: one per pytest item."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from pytest_mlab.spec import models


@dataclass(frozen=True)
class Settings:
    """The session's choices, from command-line options and ini settings."""

    agents: tuple[str, ...]
    agents_source: str  # "--agent" or "ini setting mlab_agent", for messages
    llm: str | None
    seeds: int
    variant: str
    sandbox: str
    out_dir: Path
    cache_dir: Path
    max_steps: int | None = None
    max_time: float | None = None
    prepare: bool = False  # --mlab-prepare: the controller prepares the selected tasks' data first
    fast_llm: str | None = None
    edit_llm: str | None = None
    llm_cache: Path | None = None  # --llm-cache folder
    invocation_dir: Path | None = None  # relative scripted:/replay: paths are resolved against it
    compare: Path | None = None  # --mlab-compare: reference for the regression gate
    max_drop: float = 0.10
    save_gate: Path | None = None
    resume: bool = False
    max_cost: float | None = None  # USD
    score_steps: bool = False
    ray: str | None = None  # --mlab-ray: the Ray cluster's address (or auto) that places every run


@dataclass(frozen=True)
class RunPlan:
    """Everything one run needs; built on every xdist worker identically from the same inputs."""

    task: models.TaskSpec
    agent: models.AgentSpec
    actions: tuple[models.ActionSpec, ...]
    seed: int
    variant: str
    llm: str | None
    limits: models.Limits
    sandbox: str
    out_dir: Path
    cache_dir: Path
    llms: Mapping[str, str] = field(default_factory=dict)  # role -> model as typed; empty for agents without an LLM
    llm_cache: Path | None = None
    invocation_dir: Path | None = None  # relative scripted:/replay: files are found from here

    @property
    def param_id(self) -> str:
        """``mini-baseline-s0``; an LLM-driven agent adds its model: ``mini-research-gpt-4-s0``."""
        parts = [self.variant, self.agent.name]
        if self.llm:
            parts.append(self.llm)
        parts.append(f"s{self.seed}")
        return "-".join(_id_safe(part) for part in parts)

    @property
    def run_id(self) -> str:
        return f"{self.task.name}[{self.param_id}]"

    @property
    def run_dir(self) -> Path:
        return self.out_dir / "runs" / f"{self.task.name}-{self.param_id}"

    @property
    def baseline(self) -> float | None:
        return self.task.baseline.get(self.variant)

    @property
    def needs_gpu(self) -> bool:
        """The task, or its data variant, cannot run without a GPU (it waits for one)."""
        return self.task.needs_gpu(self.variant)

    @property
    def gpus(self) -> int:
        """The GPUs one run of this plan holds where a cluster places it (--mlab-ray)."""
        return self.task.gpus_per_run(self.variant)


def _id_safe(text: str) -> str:
    """Model names like ``openai/gpt-4`` or ``scripted:demo.yaml`` become id-friendly."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def compile_plans(task: models.TaskSpec, agents: list[tuple[models.AgentSpec, tuple[models.ActionSpec, ...]]],
                  settings: Settings) -> list[RunPlan]:
    """Task x agent x seed for the session's data variant, in a stable order."""
    limits = task.limits
    if settings.max_steps is not None:
        limits = replace(limits, max_steps=settings.max_steps)
    if settings.max_time is not None:
        limits = replace(limits, max_time=settings.max_time)
    plans = []
    for agent, actions in agents:
        typed = role_models(agent, settings)
        llm = typed.get("main")
        for seed in range(settings.seeds):
            plans.append(RunPlan(task=task, agent=agent, actions=actions, seed=seed, variant=settings.variant,
                                 llm=llm, limits=limits, sandbox=settings.sandbox, out_dir=settings.out_dir,
                                 cache_dir=settings.cache_dir, llms=typed, llm_cache=settings.llm_cache,
                                 invocation_dir=settings.invocation_dir))
    return plans


def role_models(agent: models.AgentSpec, settings: Settings) -> dict[str, str]:
    """The model of each role, as typed. A role's own option wins; then --llm, which replaces every
    role the agent spec names (so one vendor's key is enough); then the spec's role; then its main.
    Empty when the agent uses no LLM (or names none and none is given)."""
    if not agent.uses_llm:
        return {}
    main = settings.llm or agent.llm.get("main")
    if not main:
        return {}
    chosen = {"fast": settings.fast_llm, "edit": settings.edit_llm}
    roles = {"main": main}
    for role, option in chosen.items():
        roles[role] = option or (settings.llm if settings.llm else agent.llm.get(role)) or main
    return roles


"""One run's result as plain data: it travels from xdist workers to the controller on the report.

A result is made in one of two ways: :meth:`RunResult.of_run` for a run that was carried out and
graded, :meth:`RunResult.crashed` for one the harness could not carry out or lost before grading.
Both start from the run's :class:`RunIdentity` and what it is :class:`JudgedBy`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

from pytest_mlab.outcomes import EndReason, Failure
from pytest_mlab.results.paper import log_errors as logged_errors
from pytest_mlab.spec.plan import RunPlan

RESULT_PROPERTY = "mlab_result"


@dataclass
class RunIdentity:
    """Which run this is: the same on every xdist worker, in the trace and in results.json."""

    nodeid: str
    run_id: str
    task: str
    agent: str
    llm: str | None
    seed: int
    variant: str
    sandbox: str
    # the GPUs (nvidia-smi indexes) the run held, grading included (--mlab-gpus); keyword-only with
    # a default, so results written before it existed still load
    gpus: list[str] = field(default_factory=list, kw_only=True)
    # the docker daemon that ran it (--mlab-docker-hosts); None for other sandboxes
    host: str | None = field(default=None, kw_only=True)

    @classmethod
    def of_plan(cls, plan: RunPlan, nodeid: str, sandbox: str, gpus: Sequence[str] | None = None,
                host: str | None = None) -> "RunIdentity":
        return cls(nodeid=nodeid, run_id=plan.run_id, task=plan.task.name, agent=plan.agent.name, llm=plan.llm,
                   seed=plan.seed, variant=plan.variant, sandbox=sandbox, gpus=list(gpus or ()), host=host)

    @classmethod
    def from_record(cls, record: dict[str, Any], fallback_run_id: str) -> "RunIdentity":
        """From a trace's ``run`` record (what a run wrote before it started acting)."""
        return cls(nodeid=record.get("nodeid", "?"), run_id=record.get("run_id", fallback_run_id),
                   task=record.get("task", "?"), agent=record.get("agent", "?"), llm=record.get("llm"),
                   seed=record.get("seed", 0), variant=record.get("variant", "?"), sandbox=record.get("sandbox", "?"),
                   gpus=list(record.get("gpus", ())), host=record.get("host"))

    def to_record(self) -> dict[str, Any]:
        return {item.name: getattr(self, item.name) for item in fields(RunIdentity)}


@dataclass(frozen=True)
class JudgedBy:
    """What a run is judged by, known before it starts; unknown ("?") for a run lost before its trace said."""

    metric: str = "?"
    direction: str = "?"
    expect: str = "?"
    baseline: float | None = None
    tags: tuple[str, ...] = ()  # the task's tags: ``paper`` puts the run in the paper's headline
    # the baseline is a fixed value (the paper's pins, such as fathomnet's 1e-10), not a measurement:
    # the baseline agent's improvement over it says nothing
    baseline_pinned: bool = False

    @classmethod
    def of_plan(cls, plan: RunPlan) -> "JudgedBy":
        return cls(plan.task.metric.name, plan.task.metric.direction, plan.agent.expect, plan.baseline,
                   tuple(plan.task.tags), plan.variant in plan.task.baseline_pinned)

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> "JudgedBy":
        values = {item.name: record[item.name] for item in fields(cls) if item.name in record}
        return cls(**{**values, "tags": tuple(values.get("tags", ()))})

    def to_record(self) -> dict[str, Any]:
        return {**asdict(self), "tags": list(self.tags)}


@dataclass
class RunResult(RunIdentity):
    metric: str
    direction: str
    expect: str
    passed: bool
    score: float | None
    baseline: float | None
    improvement: float | None
    success: bool
    valid: bool
    invalid_reason: str | None
    end_reason: str
    failure: str | None
    message: str
    steps: int
    wall_time: float
    tokens: int = 0
    cost: float = 0.0
    run_dir: str | None = None
    unmeasured_claims: list[str] = field(default_factory=list)  # scores claimed but never printed by run code
    trace: str | None = None
    best_improvement: float | None = None  # best graded step (--mlab-score-steps), else None
    resumed: bool = False  # taken from a finished run of an earlier session (--mlab-resume)
    # the harness failed, not the agent (the LLM provider for good, the sandbox, a dead worker), or
    # Ctrl-C stopped it: --mlab-resume runs it again
    infrastructure: bool = False
    tags: list[str] = field(default_factory=list)  # the task's tags (``paper``: counted in the paper's headline)
    baseline_pinned: bool = False  # see JudgedBy; rows written before it existed: read from their message
    # messages the original's plot.py drops a run for, found in the run's steps (results/paper.py)
    log_errors: list[str] = field(default_factory=list)
    # a run of the original MLAgentBench, imported from its log folder (original_logs/): where it came
    # from, and whether its score is our grader's or the one the original recorded
    imported_from: str | None = None
    score_source: str | None = None

    def __post_init__(self) -> None:
        # plain strings, never the enums: results travel between xdist processes as builtins
        self.end_reason = str(self.end_reason)
        self.failure = None if self.failure is None else str(self.failure)
        # Ctrl-C is never the agent's failure, graded or not, whatever wrote the row (older results too)
        if self.end_reason == EndReason.INTERRUPTED:
            self.infrastructure = True

    @classmethod
    def of_run(cls, identity: RunIdentity, judged: JudgedBy, *, passed: bool, score: float | None,
               improvement: float | None, success: bool, valid: bool, invalid_reason: str | None,
               end_reason: EndReason, failure: str | None, message: str, steps: int, wall_time: float, run_dir: str,
               trace: str, tokens: int = 0, cost: float = 0.0, unmeasured_claims: list[str] | None = None,
               infrastructure: bool = False) -> "RunResult":
        """A run that was carried out and graded; its trace is searched for the log messages that the
        paper's rule drops runs for (results/paper.py)."""
        return cls(**identity.to_record(), **judged.to_record(), passed=passed, score=score, improvement=improvement,
                   success=success, valid=valid, invalid_reason=invalid_reason, end_reason=end_reason,
                   failure=failure, message=message, steps=steps, wall_time=wall_time, run_dir=run_dir, trace=trace,
                   tokens=tokens, cost=cost, unmeasured_claims=list(unmeasured_claims or ()),
                   infrastructure=infrastructure, log_errors=logged_errors(trace))

    @classmethod
    def crashed(cls, identity: RunIdentity, message: str, *, judged: JudgedBy = JudgedBy(),
                end_reason: EndReason = EndReason.CRASHED, wall_time: float = 0.0,
                trace: str | None = None, steps: int = 0) -> "RunResult":
        """A run the harness could not carry out (data, sandbox) or lost before grading it (a dead
        worker, a session stopped first): it counts as failed by the harness, not the agent."""
        return cls(**identity.to_record(), **judged.to_record(), passed=False, score=None, improvement=None,
                   success=False, valid=False, invalid_reason=None, end_reason=end_reason, failure=Failure.of_end(end_reason), message=message,
                   steps=steps, wall_time=wall_time, trace=trace, run_dir=str(Path(trace).parent) if trace else None,
                   infrastructure=True, log_errors=logged_errors(trace))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunResult":
        names = {field.name for field in fields(cls)}
        values = {key: value for key, value in data.items() if key in names}
        if "baseline_pinned" not in values:  # written before the field: the verdict's message said so
            message = str(values.get("message"))
            values["baseline_pinned"] = values.get("expect") == "baseline" and (
                "(pinned)" in message or "the baseline is pinned at" in message)
        return cls(**values)

"""One run's result as plain data: it travels from xdist workers to the controller on the report."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

RESULT_PROPERTY = "mlab_result"


@dataclass
class RunResult:
    nodeid: str
    run_id: str
    task: str
    agent: str
    llm: str | None
    seed: int
    variant: str
    sandbox: str
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
    # the harness failed, not the agent (the LLM provider for good, the sandbox, a dead worker):
    # --mlab-resume runs it again
    infrastructure: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunResult":
        names = {field.name for field in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in names})


def unfinished_result(*, nodeid: str, run_id: str, task: str, agent: str, llm: str | None, seed: int, variant: str,
                      sandbox: str, end_reason: str, message: str, wall_time: float = 0.0,
                      trace: str | None = None) -> RunResult:
    """A row for a run the harness lost before grading it (a dead worker, a session stopped first):
    what the task's metric was is unknown here, and the run counts as failed by the harness."""
    return RunResult(
        nodeid=nodeid, run_id=run_id, task=task, agent=agent, llm=llm, seed=seed, variant=variant, sandbox=sandbox,
        metric="?", direction="?", expect="?", passed=False, score=None, baseline=None, improvement=None,
        success=False, valid=False, invalid_reason=None, end_reason=end_reason, failure=end_reason, message=message,
        steps=0, wall_time=wall_time, trace=trace, run_dir=str(Path(trace).parent) if trace else None,
        infrastructure=True)

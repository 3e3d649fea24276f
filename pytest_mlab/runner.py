"""Carry out one run plan: data -> sandbox -> environment -> agent -> trace -> grade -> result.

Whatever happens to the agent (crash, time-out, Ctrl-C), the trace is closed with how the run
ended and the final workspace is snapshotted and graded.
"""

from __future__ import annotations

import shutil
import time
import traceback
from pathlib import Path

from pytest_mlab.agents import load_agent
from pytest_mlab.data import prepare_data
from pytest_mlab.env import Environment, ReadOnlyRules
from pytest_mlab.env import environment as ends
from pytest_mlab.env.deadline import RunTimedOut, deadline
from pytest_mlab.grading.claims import unmeasured_claims
from pytest_mlab.grading.grader import grade_snapshot
from pytest_mlab.grading.verdict import judge
from pytest_mlab.llm import LLMError, TokenLimitExceeded
from pytest_mlab.llm.session import human_helper, open_session
from pytest_mlab.results.record import RunResult
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.sandbox.registry import resolve_kind
from pytest_mlab.spec.plan import RunPlan
from pytest_mlab.trace import SnapshotStore, TraceWriter, read_trace


def execute(plan: RunPlan, nodeid: str, *, console=None, session: str | None = None) -> RunResult:
    """``console``: the terminal for the ``human`` LLM and Request Help (None: sys.stdin/stdout).
    ``session``: the pytest session's id, written in the trace so that its controller finds this
    run's result on disk even when the report carrying it is lost (Ctrl-C, a dead worker)."""
    started = time.monotonic()
    data = prepare_data(plan.task, plan.variant, plan.cache_dir)
    run_dir = plan.run_dir
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    trace_path = run_dir / "trace.jsonl"
    data_files = data.public_files()
    read_only = ReadOnlyRules(frozenset(data_files), plan.task.read_only)
    with TraceWriter(trace_path) as trace, open_sandbox(plan.sandbox, options=sandbox_options(plan)) as sandbox:
        trace.write({"type": "run", "session": session, "run_id": plan.run_id, "nodeid": nodeid,
                     "task": plan.task.name, "agent": plan.agent.name, "llm": plan.llm, "seed": plan.seed,
                     "variant": plan.variant, "sandbox": sandbox.name, "limits": vars(plan.limits),
                     "actions": [a.name for a in plan.actions], "data_files": data_files})
        _populate(sandbox, plan, data.public, data_files)
        snapshots = SnapshotStore(run_dir / "snapshots")
        llm = open_session(plan, trace, console=console) if plan.llms else None
        env = Environment(sandbox=sandbox, actions=plan.actions, limits=plan.limits, read_only=read_only,
                          trace=trace, snapshots=snapshots, research_problem=plan.task.description,
                          llm=llm, human=human_helper(llm))
        if llm is not None:
            llm.current_step = lambda: env.steps + 1
        interrupted, infrastructure, detail = False, False, None
        try:
            with deadline(plan.limits.max_time):
                load_agent(plan).run(env)
            if not env.done:
                env.end(ends.NO_FINAL_ANSWER)
        except RunTimedOut as exc:
            env.end(ends.TIME_LIMIT, str(exc))
        except TokenLimitExceeded as exc:
            env.end(ends.TOKEN_LIMIT, str(exc))
        except LLMError as exc:  # the provider failed for good: a crash, explained without a traceback
            infrastructure, detail = True, f"LLMError: {exc}"
            env.end(ends.CRASHED, detail)
        except KeyboardInterrupt:
            interrupted = True
            env.end(ends.INTERRUPTED, "Ctrl-C")
        except Exception as exc:  # an agent bug must still leave a graded, readable run
            detail = "".join(traceback.format_exception(exc))[-4000:]
            env.end(ends.CRASHED, detail)
        final = env.final_snapshot()
        grade = grade_snapshot(plan.task, snapshots, final, data, sandbox=sandbox.name, options=sandbox_options(plan))
        claims = unmeasured_claims(read_trace(trace_path))
        verdict = judge(plan.task, plan.baseline, grade, env.end_reason, plan.agent.expect, detail, claims)
        result = RunResult(
            nodeid=nodeid, run_id=plan.run_id, task=plan.task.name, agent=plan.agent.name, llm=plan.llm,
            seed=plan.seed, variant=plan.variant, sandbox=sandbox.name, metric=plan.task.metric.name,
            direction=plan.task.metric.direction, expect=plan.agent.expect, passed=verdict.passed,
            score=grade.score, baseline=plan.baseline, improvement=verdict.improvement, success=verdict.success,
            valid=grade.valid, invalid_reason=grade.invalid_reason, end_reason=env.end_reason,
            failure=verdict.failure, message=verdict.message, steps=env.steps,
            wall_time=round(time.monotonic() - started, 3), run_dir=str(run_dir), trace=str(trace_path),
            tokens=llm.total_tokens if llm else 0, cost=llm.total_cost if llm else 0.0,
            unmeasured_claims=claims, infrastructure=infrastructure)
        trace.write({"type": "result", "session": session, "snapshot": final, **result.to_dict()})
    if interrupted:
        raise KeyboardInterrupt
    return result


def sandbox_options(plan: RunPlan) -> SandboxOptions:
    """The task's limits and run-time requirements, as the sandbox backends take them."""
    return SandboxOptions.for_task(plan.task, plan.limits, plan.run_id)


def _populate(sandbox, plan: RunPlan, public: Path, data_files: list[str]) -> None:
    """Starter files are copied (the agent edits them); data files are linked (read-only, maybe large)."""
    for path, relative in plan.task.env_files():
        sandbox.copy_in(path, relative)
    for relative in data_files:
        sandbox.copy_in(public / relative, relative, link=True)


def crashed_result(plan: RunPlan, nodeid: str, message: str) -> RunResult:
    """A row for a run the harness could not carry out (data preparation or the sandbox failed)."""
    return RunResult(
        nodeid=nodeid, run_id=plan.run_id, task=plan.task.name, agent=plan.agent.name, llm=plan.llm,
        seed=plan.seed, variant=plan.variant, sandbox=resolve_kind(plan.sandbox), metric=plan.task.metric.name,
        direction=plan.task.metric.direction, expect=plan.agent.expect, passed=False, score=None,
        baseline=plan.baseline, improvement=None, success=False, valid=False, invalid_reason=None,
        end_reason=ends.CRASHED, failure=ends.CRASHED, message=message, steps=0, wall_time=0.0,
        infrastructure=True)

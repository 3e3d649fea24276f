"""An original run turned into a run folder of ours: a trace (every step's action, arguments and
observation, and each LLM call its step logs hold), snapshots of the files the original saved, and
a result row marked imported.

The score: where the original saved the final workspace (``traces/step_final_files``) and the
task's data for the variant is on this machine, our grader grades it; otherwise the score the
original's eval.py recorded, when the user gives its output; otherwise none (a failure, as the
original's -1). The row says which. Success and the paper's rule then apply as to our own runs.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from pytest_mlab.data.cache import is_prepared, prepare_data
from pytest_mlab.errors import MlabError, OriginalLogError
from pytest_mlab.grading.grader import Grade, grade_snapshot
from pytest_mlab.grading.verdict import judge
from pytest_mlab.original_logs.layout import FoundRun
from pytest_mlab.original_logs.names import agent_for, task_for
from pytest_mlab.original_logs.reader import (OriginalRun, agent_step_numbers, connection_error, end_reason,
                                              read_run)
from pytest_mlab.outcomes import EndReason
from pytest_mlab.results.paper import CONNECTION_ERROR, LOG_ERRORS
from pytest_mlab.results.record import JudgedBy, RunIdentity, RunResult
from pytest_mlab.results.signing import results_key, signed
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.trace import SnapshotStore, TraceWriter

REGRADED = "regraded: our grader on the final workspace the original saved"
RECORDED = "recorded: the original's eval.py score"
IMPORTED_SANDBOX = "imported"


@dataclass
class ImportSettings:
    out: Path
    variant: str
    cache: Path
    sandbox: str
    agent: str | None = None
    llm: str | None = None
    task_map: dict[str, str] = field(default_factory=dict)
    recorded: dict[str, float] = field(default_factory=dict)  # a run's path, as eval.py keyed it -> final_score


@dataclass
class Imported:
    runs: list[RunResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # one line per run that could not be imported


def import_runs(found: list[FoundRun], tasks: dict[str, Callable[[], TaskSpec]], settings: ImportSettings) -> Imported:
    """Every run that can be imported, and a problem line (naming its file) for every one that
    cannot; one bad run never stops the others. ``tasks``: our task names -> their spec."""
    done = Imported()
    seeds: dict[tuple[str, str], int] = {}
    for run_found in found:
        try:
            original = read_run(run_found)
            name = task_for([n for n in (original.benchmark_folder, run_found.task_folder) if n],
                            settings.task_map, set(tasks))
            if name is None:
                told = original.benchmark_folder or run_found.task_folder or "?"
                raise OriginalLogError(f"{run_found.shown}: task '{told}' is not a task of this project; if it is a "
                                       f"task of a fork under another name, map it: --task-map {told}=TASK")
            task = tasks[name]()
            agent, llm = agent_for(run_found.experiment, settings.agent, settings.llm)
            seed = seeds[(name, agent)] = seeds.get((name, agent), -1) + 1
            done.runs.append(import_run(original, task, agent, llm, seed, settings))
        except MlabError as exc:
            done.problems.append(str(exc))
    return done


def import_run(original: OriginalRun, task: TaskSpec, agent: str, llm: str | None, seed: int,
               settings: ImportSettings) -> RunResult:
    found = original.found
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", found.run or "run").strip("_") or "run"
    run_id = f"{task.name}[{settings.variant}-{agent}-imported-{slug}]"
    run_dir = settings.out / "runs" / f"{task.name}-{settings.variant}-{agent}-imported-{slug}"
    if run_dir.exists():
        raise OriginalLogError(f"{found.shown}: {run_dir} exists already (a run of the same name imported before); "
                               "import into another --out folder, or remove that run folder first")
    run_dir.mkdir(parents=True)
    identity = RunIdentity(nodeid=f"imported::{found.shown}", run_id=run_id, task=task.name, agent=agent, llm=llm,
                           seed=seed, variant=settings.variant, sandbox=IMPORTED_SANDBOX)
    baseline = task.baseline.get(settings.variant)
    judged = JudgedBy(task.metric.name, task.metric.direction, "success", baseline, tuple(task.tags),
                      settings.variant in task.baseline_pinned)
    reason, detail = end_reason(original, max_steps=task.limits.max_steps)
    trace_path = run_dir / "trace.jsonl"
    store = SnapshotStore(run_dir / "snapshots", fsync=False)
    with TraceWriter(trace_path) as trace:
        trace.write({"type": "run", **identity.to_record(), **judged.to_record(), "imported_from": found.shown,
                     "research_problem": original.research_problem})
        final = _write_steps(trace, store, original, reason)
        trace.write({"type": "ended", "reason": reason.value, "detail": detail, "steps": len(original.steps)})
        grade, source = _grade(original, task, store, final, settings)
        verdict = judge(task, baseline, grade, reason, "success", detail, variant=settings.variant)
        tokens = sum(call.prompt_tokens + call.completion_tokens for call in original.calls)
        result = RunResult.of_run(
            identity, judged, passed=verdict.passed, score=grade.score, improvement=verdict.improvement,
            success=verdict.success, valid=grade.valid, invalid_reason=grade.invalid_reason, end_reason=reason,
            failure=verdict.failure, message=_message(verdict.message, source, original),
            steps=len(original.steps), wall_time=round(original.overall_time or 0.0, 3), run_dir=str(run_dir),
            trace=str(trace_path), tokens=tokens, infrastructure=reason.harness_failed)
        logged = {marker for marker in LOG_ERRORS if marker in original.logs}
        result = replace(result, imported_from=found.shown, score_source=source,
                         log_errors=[*sorted(set(result.log_errors) | logged),
                                     *([CONNECTION_ERROR] if connection_error(original) else [])])
        store.wait_durable()
        trace.write(signed({"type": "result", "session": "imported", "snapshot": final, **result.to_dict()},
                           results_key(settings.out)))
    return result


def _write_steps(trace: TraceWriter, store: SnapshotStore, original: OriginalRun, reason: EndReason) -> str | None:
    """The step and LLM records, with a snapshot per step (the step before's where the original
    saved none); the final workspace's snapshot id, or None when the original saved none."""
    by_agent_step = agent_step_numbers(original)
    calls: dict[int, list] = {}
    for call in original.calls:
        calls.setdefault(by_agent_step.get(call.agent_step, len(original.steps)), []).append(call)
    snapshot = None
    times = [step.timestamp for step in original.steps]
    for number, step in enumerate(original.steps, start=1):
        for call in calls.pop(number, []):
            trace.write(_llm_record(number, call))
        if step.files is not None:
            snapshot = store.snapshot(step.files).id
        started = times[number - 2] if number > 1 and times[number - 2] is not None else step.timestamp
        last = number == len(original.steps)
        trace.write({"type": "step", "step": number, "action": step.action, "arguments": step.arguments,
                     "observation": step.observation, "error": step.observation.startswith("EnvError"),
                     "started": started, "duration": round(step.timestamp - started, 6)
                     if step.timestamp is not None and started is not None else None,
                     "low_level": [], "snapshot": snapshot, "ended": reason.value if last else None,
                     "t": step.timestamp or time.time()})
    for number in sorted(calls):  # calls of a step that never reached the trace (the run ended first)
        for call in calls[number]:
            trace.write(_llm_record(number, call))
    if original.final_files is not None:
        return store.snapshot(original.final_files).id
    return None


def _llm_record(step: int, call) -> dict:
    return {"type": "llm", "step": step, "role": "main", "model": call.model, "provider_model": None,
            "purpose": f"the original's agent step {call.agent_step}", "prompt": call.prompt,
            "completion": call.completion, "stop": [], "temperature": None, "max_tokens": call.max_tokens,
            "timeout": None, "prompt_tokens": call.prompt_tokens, "completion_tokens": call.completion_tokens,
            "cost": 0.0, "latency": None, "cached": False, "attempts": 1, "retries": 0, "errors": []}


def _grade(original: OriginalRun, task: TaskSpec, store: SnapshotStore, final: str | None,
           settings: ImportSettings) -> tuple[Grade, str | None]:
    """Our grader's grade of the saved final workspace, else the original's recorded score, else
    none; and where the score came from."""
    variant = settings.variant
    data_here = variant in task.data and (not task.data[variant].requires.network
                                          or is_prepared(task, variant, settings.cache))
    if final is not None and data_here:
        data = prepare_data(task, variant, settings.cache)
        options = SandboxOptions.for_task(task, task.limits, f"import {original.found.shown}")
        return grade_snapshot(task, store, final, data, sandbox=settings.sandbox, options=options), REGRADED
    recorded = recorded_score(settings.recorded, original.found)
    if recorded is not None:
        if recorded == -1:  # eval.py's mark for "nothing graded" (no final files, or its evaluator raised)
            return Grade(None, "the original's eval.py recorded -1: it graded nothing"), RECORDED
        return Grade(recorded), RECORDED
    if final is None:
        return Grade(None, "the original saved no final workspace (env_log/traces/step_final_files): it never "
                           "exited cleanly, and its eval.py scores such a run -1"), None
    return Grade(None, f"the final workspace is saved, but the task's '{variant}' data is not on this machine: "
                       f"run `pytest-mlab prepare {task.name} --data {variant}`, then `pytest-mlab rescore "
                       f"{settings.out}`"), None


def recorded_score(recorded: dict[str, float], found: FoundRun) -> float | None:
    """The final_score eval.py recorded for this run: its output is keyed by each run's trace.json
    path on the machine that ran it, so the run is matched by its last path parts."""
    tail = "/".join(part for part in (found.experiment, found.task_folder, found.run) if part)
    for path, score in recorded.items():
        if path.replace("\\", "/").rstrip("/").endswith(f"{tail}/env_log/trace.json"):
            return score
    return None


def read_recorded_scores(path: Path) -> dict[str, float]:
    """eval.py's output (``--output-file``): trace path -> EvaluationResult, of which final_score."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OriginalLogError(f"{path}: cannot be read as the original eval.py's output ({exc})") from None
    if not isinstance(data, dict):
        raise OriginalLogError(f"{path}: expected eval.py's output, a JSON object keyed by trace.json paths")
    scores = {}
    for key, value in data.items():
        score = value.get("final_score") if isinstance(value, dict) else None
        if isinstance(score, (int, float)):
            scores[str(key)] = float(score)
    return scores


def _message(verdict: str, source: str | None, original: OriginalRun) -> str:
    said = f"imported ({source or 'no score'}): {verdict}"
    return "; ".join([said, *original.notes])

"""Constructed results and saved runs for the results tests."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_mlab.results.record import RunResult
from pytest_mlab.results.signing import results_key, signed
from pytest_mlab.trace import SnapshotStore, TraceWriter

SESSION = "this-session"  # the session id of traces written here, unless told otherwise
KEY = bytes(range(32))  # the key saved_run signs its result record with, as a results folder's would


def run(task: str = "digits", agent: str = "reference", seed: int = 0, **changes) -> RunResult:
    values = dict(nodeid=f"specs/tasks/{task}.yaml::{task}[mini-{agent}-s{seed}]", run_id=f"{task}[mini-{agent}-s{seed}]",
                  task=task, agent=agent, llm=None, seed=seed, variant="mini", sandbox="local", metric="accuracy",
                  direction="maximize", expect="success", passed=True, score=0.9, baseline=0.6, improvement=0.5,
                  success=True, valid=True, invalid_reason=None, end_reason="final answer", failure=None,
                  message="accuracy 0.9 vs baseline 0.6: +50.0%, needs > +10%", steps=3, wall_time=10.0)
    values.update(changes)
    return RunResult(**values)


def seeds(successes: int, total: int, **changes) -> list[RunResult]:
    """``total`` runs of one group, the first ``successes`` of them successful."""
    return [run(seed=index, success=index < successes, passed=index < successes, **changes) for index in range(total)]


def saved_run(run_dir: Path, steps: list[tuple[str, dict[str, str], str]], result: RunResult | None = None,
              extra_records: list[dict] = ()) -> RunResult:
    """A run folder as the runner leaves it: each step (action, files written, observation) gets a
    snapshot of a real workspace; ``result`` closes the trace (omit it for a run killed mid-way)."""
    workspace = run_dir.parent / (run_dir.name + "-ws")
    workspace.mkdir(parents=True)
    store = SnapshotStore(run_dir / "snapshots", fsync=False)
    with TraceWriter(run_dir / "trace.jsonl") as trace:
        trace.write({"type": "run", "run_id": result.run_id if result else "x"})
        for record in extra_records:
            trace.write(record)
        snapshot = None
        for number, (action, files, observation) in enumerate(steps, start=1):
            for name, content in files.items():
                (workspace / name).write_text(content)
            snapshot = store.snapshot(workspace).id
            trace.write({"type": "step", "step": number, "action": action, "arguments": files,
                         "observation": observation, "error": observation.startswith("EnvError"),
                         "duration": 0.5, "low_level": [], "snapshot": snapshot, "ended": None})
        if result is not None:
            result.run_dir, result.trace = str(run_dir), str(run_dir / "trace.jsonl")
            trace.write(signed({"type": "result", "snapshot": snapshot, **result.to_dict()}, KEY))
    return result


def write_trace(out_dir: Path, result, *, session: str | None = SESSION, graded: bool = True,
                tail: bytes = b"") -> Path:
    """A run folder as the runner leaves it: ``run`` record, one step, and the ``result`` record
    when ``graded``; ``tail`` is appended raw (a line cut short by a kill)."""
    path = out_dir / "runs" / result.run_id.replace("[", "-").rstrip("]") / "trace.jsonl"
    with TraceWriter(path) as trace:
        trace.write({"type": "run", "session": session, "run_id": result.run_id, "nodeid": result.nodeid,
                     "task": result.task, "agent": result.agent, "llm": None, "seed": result.seed,
                     "variant": result.variant, "sandbox": "bwrap", "t": 100.0})
        trace.write({"type": "step", "step": 1, "t": 107.5})
        if graded:
            trace.write(signed({"type": "result", "session": session, **result.to_dict()}, results_key(out_dir)))
    with open(path, "ab") as handle:
        handle.write(tail)
    return path


def strict(text: str):
    """``json.loads`` that refuses ``Infinity`` and ``NaN``, as browsers and jq do."""
    def refuse(constant: str):
        raise ValueError(f"not strict JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def write_json(path: Path, payload) -> Path:
    path.write_text(json.dumps(payload))
    return path

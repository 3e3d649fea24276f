"""``replay:TRACE``: answer with the completions an earlier run recorded, in order, with no key.

What "diverges" means: prompts are NOT compared, because they embed observations that change from
run to run without the agent doing anything different (execution times, temporary paths). The
replayed run diverges when its n-th call comes from a different role, or for a different purpose,
than the recorded n-th call, or when it makes more calls than the trace holds. A recorded call that
failed (token limit, provider error, budget spent, time limit) fails the same way again, so the replay ends as
the original did; one that was interrupted (Ctrl-C) has no completion to give, and fails as a plain LLM error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_mlab.errors import TraceError
from pytest_mlab.llm.base import FAILURES, Completion, LLMError
from pytest_mlab.llm.provider import Request, offline_completion

PREFIX = "replay:"


def trace_path(target: str | Path) -> Path:
    """A trace file, or a run folder holding ``trace.jsonl``."""
    path = Path(target).expanduser()
    return path / "trace.jsonl" if path.is_dir() else path


def _records(path: Path) -> list[dict[str, Any]]:
    from pytest_mlab.trace import read_trace

    try:
        return read_trace(path)
    except TraceError as exc:
        raise LLMError(f"--llm={PREFIX}{path}: {exc}") from None


def unavailable(target: str, task: str) -> str | None:
    """Why ``replay:TARGET`` cannot drive ``task`` (a skip reason), or None."""
    path = trace_path(target)
    if not path.is_file():
        return f"--llm={PREFIX}{target}: no trace file there (give a run's trace.jsonl or its run folder)"
    try:
        records = _records(path)
    except LLMError as exc:
        return str(exc)
    recorded_task = next((r.get("task") for r in records if r.get("type") == "run"), None)
    if recorded_task is not None and recorded_task != task:
        return f"the replayed trace {path} records a run of task '{recorded_task}', not '{task}'"
    if not any(r.get("type") == "llm" for r in records):
        return f"the replayed trace {path} holds no LLM calls to replay"
    return None


class ReplayProvider:
    cacheable = False
    billed = False

    def __init__(self, target: Path) -> None:
        self.path = trace_path(target)
        self.calls = [r for r in _records(self.path) if r.get("type") == "llm"]
        self.position = 0

    def answer(self, request: Request, errors: list[dict[str, Any]]) -> Completion:
        number = self.position + 1
        if self.position >= len(self.calls):
            raise LLMError(f"replay of {self.path} diverged: call {number} ({request.role}, "
                           f"{request.purpose or 'no purpose given'}) has no recorded counterpart; "
                           f"the trace holds {len(self.calls)} LLM calls")
        recorded = self.calls[self.position]
        self.position += 1
        expected = (recorded.get("role"), recorded.get("purpose", ""))
        if expected != (request.role, request.purpose):
            raise LLMError(f"replay of {self.path} diverged at call {number} (step {recorded.get('step')}): "
                           f"recorded role '{expected[0]}' for '{expected[1]}', but this run asked role "
                           f"'{request.role}' for '{request.purpose}'")
        if recorded.get("completion") is None:
            message = recorded.get("message") or "the recorded call failed"
            kind = next((kind for kind, label in FAILURES.items() if label == recorded.get("failure")), LLMError)
            raise kind(f"(replayed) {message}")
        text = str(recorded["completion"])
        return offline_completion(request, text)

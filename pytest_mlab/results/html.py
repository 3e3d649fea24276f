"""report.html: one static file (CSS, JS, data and PNGs inline) that opens offline.

Everything from a run (observations, arguments, file contents) is untrusted text: it travels as
JSON inside a ``<script type="application/json">`` block with ``<`` escaped, and the page puts it
on screen only through ``textContent``, never as markup.
"""

from __future__ import annotations

import base64
import difflib
import html
import json
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_mlab.errors import TraceError
from pytest_mlab.results.aggregate import aggregate, metric_spread
from pytest_mlab.results.environment import describe_environment
from pytest_mlab.results.paper import paper_count
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.strict_json import dumps
from pytest_mlab.trace.step_scores import saved_step_scores
from pytest_mlab.trace import SnapshotStore, read_trace

THINKING_KEYS = ("thinking", "reflection", "research_plan", "plan", "fact_check", "thought", "reasoning")
MAX_TEXT = 20_000  # characters of one observation or argument shown in the report
MAX_LLM_TEXT = 200_000  # characters of one prompt or completion: whole, but for the most extreme
LLM_FIELDS = ("role", "model", "purpose", "prompt_tokens", "completion_tokens", "cost", "cached", "attempts",
              "failure", "message")
MAX_DIFF_FILE = 256 * 1024
MAX_DIFF_LINES = 400
MAX_DIFF_FILES = 200  # files one step's diff shows; the rest are counted


def write_report(out_dir: Path, runs: list[RunResult], plots: list[Path], title: str = "pytest-mlab report",
                 settings: dict[str, Any] | None = None) -> Path:
    """``settings``: the session's, as results.json holds them; its ``environment``, when recorded,
    heads the page, else the environment writing the report does."""
    data = {"title": title, "header": _header(runs, settings or {}), "aggregate": aggregate(runs),
            "metrics": metric_spread(runs), "runs": [_run(run) for run in sorted(runs, key=lambda r: r.nodeid)],
            "plots": [{"name": path.stem.replace("_", " "), "src": _data_uri(path)} for path in plots]}
    template = resources.files("pytest_mlab.results").joinpath("report_template.html").read_text(encoding="utf-8")
    page = (template.replace("{{TITLE}}", html.escape(title))
            .replace("{{DATA}}", dumps(data).replace("<", "\\u003c")))
    path = out_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path


def _header(runs: list[RunResult], settings: dict[str, Any]) -> dict[str, Any]:
    """What the page's header says: when, which commit, where, and with which models."""
    environment = settings.get("environment") or describe_environment(settings.get("invocation_dir"))
    return {**environment, "isolation": settings.get("isolation"),
            "sandboxes": sorted({run.sandbox for run in runs if run.sandbox}),
            "llms": sorted({run.llm for run in runs if run.llm})}


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _cap(text: Any, limit: int = MAX_TEXT) -> str:
    text = text if isinstance(text, str) else json.dumps(text, indent=1, default=str)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... ({len(text) - limit} more characters in the trace)"


def _llm_call(record: dict[str, Any]) -> dict[str, Any]:
    """One LLM call as the step viewer shows it: its numbers, and its prompt and completion whole."""
    texts = {key: None if record.get(key) is None else _cap(record[key], MAX_LLM_TEXT) for key in ("prompt", "completion")}
    return {**{key: record.get(key) for key in LLM_FIELDS}, **texts}


def _run(result: RunResult) -> dict[str, Any]:
    """The run's row plus its trace: ``steps`` stays the row's count, ``step_records`` the steps;
    ``paper``: how the paper's rule counts it (results/paper.py)."""
    run = {**result.to_dict(), "paper": asdict(paper_count(result)), "step_records": [], "ended": None, "curve": None,
           "problem": None, "late_llm": []}
    run_dir = Path(result.run_dir) if result.run_dir else None
    if run_dir is None:
        return run
    try:
        records = read_trace(run_dir / "trace.jsonl")
    except TraceError as exc:
        return {**run, "problem": str(exc)}
    store = SnapshotStore(run_dir / "snapshots", fsync=False) if (run_dir / "snapshots").is_dir() else None
    pending_llm: list[dict[str, Any]] = []
    previous = None
    for record in records:
        kind = record.get("type")
        if kind == "llm":
            pending_llm.append(_llm_call(record))
        elif kind == "step":
            snapshot = record.get("snapshot")
            run["step_records"].append({
                "step": record.get("step"), "action": _cap(record.get("action")),
                "arguments": _cap(record.get("arguments")), "observation": _cap(record.get("observation", "")),
                "error": bool(record.get("error")), "duration": record.get("duration"),
                "thinking": {key: _cap(text) for key, text in (record.get("thinking") or {}).items() if text}
                or {key: _cap(record[key]) for key in THINKING_KEYS if record.get(key)},
                "low_level": len(record.get("low_level") or []), "llm": pending_llm,
                "diff": _diffs(store, previous, snapshot) if store and previous and snapshot else [],
            })
            pending_llm, previous = [], snapshot or previous
        elif kind == "ended":
            run["ended"] = {"reason": record.get("reason"), "detail": _cap(record.get("detail") or "")}
    run["late_llm"] = pending_llm  # calls after the last step (the one a provider failed on, say)
    curve = saved_step_scores(run_dir)
    run["curve"] = curve["steps"] if curve else None
    return run


def _diffs(store: SnapshotStore, old: str, new: str) -> list[dict[str, str]]:
    """Unified diffs of the text files a step changed; binary or large files are only named, and
    past ``MAX_DIFF_FILES`` files are only counted. Each listed file costs one lookup, so a step
    that touches 100,000 files costs what listing its paths costs."""
    if old == new:
        return []
    try:
        changes = store.diff(old, new)
    except TraceError as exc:
        return [{"path": "?", "status": "unreadable", "text": str(exc)}]
    out: list[dict[str, str]] = []
    for status in ("added", "changed", "removed"):
        for path in changes[status]:
            if len(out) == MAX_DIFF_FILES:
                break
            out.append(_file_diff(store, old, new, path, status))
    left = sum(len(paths) for paths in changes.values()) - len(out)
    if left > 0:
        out.append({"path": "...", "status": "more", "text": f"{left} more files changed in this step (not shown)"})
    return out


def _file_diff(store: SnapshotStore, old: str, new: str, path: str, status: str) -> dict[str, str]:
    try:
        entry = store.file_entry(old if status == "removed" else new, path) or {}
        size = max(int(entry.get("size", 0)), 0)
        if size > MAX_DIFF_FILE:
            return {"path": path, "status": status, "text": f"({size} bytes, not shown)"}
        before = _text(store, old, path) if status != "added" else ""
        after = _text(store, new, path) if status != "removed" else ""
    except (TraceError, OSError) as exc:
        return {"path": path, "status": status, "text": f"(unreadable: {exc})"}
    if before is None or after is None:
        return {"path": path, "status": status, "text": "(binary file)"}
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm=""))
    if len(lines) > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [f"... ({len(lines) - MAX_DIFF_LINES} more lines)"]
    return {"path": path, "status": status, "text": "\n".join(lines)}


def _text(store: SnapshotStore, snapshot: str, path: str) -> str | None:
    data = store.read_file(snapshot, path)
    if data is None:
        return ""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None

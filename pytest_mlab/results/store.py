"""Write results.json and results.csv, and render the terminal table.

pandas is imported only here, at the end of a session, so collection and workers stay light.
"""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path
from typing import Any

from pytest_mlab.errors import MlabError
from pytest_mlab.results.aggregate import BASELINE_EXPECT, aggregate, agent_label
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.strict_json import dumps
from pytest_mlab.spec.units import format_duration

RESULTS_VERSION = 2
RESULTS_FILE = "results.json"
NOTE_WIDTH = 110  # the notes under the summary wrap here
TABLE_COLUMNS = ["task", "agent", "seed", "score", "baseline", "improvement", "success", "steps", "time", "result"]


def write_results(out_dir: Path, results: list[RunResult], settings: dict[str, Any]) -> Path:
    """results.json (documented schema, version field), results.csv (one row per run) and
    summary.csv (one row per task, agent, llm and data variant)."""
    import pandas as pd

    out_dir.mkdir(parents=True, exist_ok=True)
    ordered = sorted(results, key=lambda r: r.nodeid)
    summary = aggregate(ordered)
    payload = {"version": RESULTS_VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "settings": settings, "aggregate": summary, "runs": [result.to_dict() for result in ordered]}
    path = out_dir / RESULTS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(dumps(payload, indent=2) + "\n")
    os.replace(tmp, path)
    frame = pd.DataFrame([result.to_dict() for result in ordered], columns=list(RunResult.__dataclass_fields__))
    frame.to_csv(out_dir / "results.csv", index=False)
    groups = pd.DataFrame([{**row, "failures": json.dumps(row["failures"])} for row in summary["groups"]])
    groups.to_csv(out_dir / "summary.csv", index=False)
    return path


def load_results(path: Path) -> dict[str, Any]:
    """A saved results.json (any version), with ``runs`` as RunResult objects."""
    if path.is_dir():
        path = path / RESULTS_FILE
    try:
        payload = json.loads(path.read_text())
    except FileNotFoundError:
        raise MlabError(f"{path}: no results.json here; give the --mlab-out folder of a finished session") from None
    except (OSError, ValueError) as exc:
        raise MlabError(f"{path}: not a readable results.json ({exc})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("runs"), list):
        raise MlabError(f"{path}: not a pytest-mlab results.json (it has no 'runs' list)")
    runs = []
    for index, run in enumerate(payload["runs"]):
        try:
            runs.append(RunResult.from_dict(run))
        except (TypeError, AttributeError) as exc:  # a row cut short or edited by hand
            raise MlabError(f"{path}: run {index} of 'runs' is not a pytest-mlab result row ({exc})") from None
    return {**payload, "runs": runs}


def render_summary(results: list[RunResult]) -> str:
    """Per (task, agent): success rate with its 95% interval, the same by the paper's rule, mean
    improvement, tokens, cost, time; then each agent's average success over its headline tasks;
    then what the reader needs to read them (the baseline's cells, the paper's rule)."""
    import pandas as pd

    summary = aggregate(results)
    rows = [{"task": row["task"], "agent": agent_label(row), "runs": row["runs"],
             "success": _rate(row, "success_rate", "ci_low", "ci_high"),
             "paper rule": _paper_rate(row),
             "improvement": _improvement(row), "best step": _percent(row["best_step_improvement"]),
             "tokens": _count(row["mean_tokens"]), "cost": f"${row['total_cost']:.2f}",
             "time": format_duration(row["mean_wall_time"] or 0.0)} for row in summary["groups"]]
    agents = [{"agent": agent_label(row), "tasks": row["tasks"], "runs": row["runs"],
               "headline over": _counted(row["paper_tasks"], "paper task") if row["headline_tasks"] == "paper"
               else "all " + _counted(row["tasks"], "task"),
               "average success": _headline(row, "average_success_rate", "n/a (baseline)"),
               "excl. infra": _headline(row, "average_success_rate_excluding_infrastructure"),
               "paper rule": _headline(row, "paper_average_success_rate"),
               "median improvement": _percent(row["median_improvement"]),
               "other tasks": _other_tasks(row),
               "infra failures": row["infrastructure_failures"],
               "cost": f"${row['total_cost']:.2f}"} for row in summary["agents"]]
    tables = pd.DataFrame(rows).to_string(index=False) + "\n\n" + pd.DataFrame(agents).to_string(index=False)
    return tables + "\n\n" + "\n".join(_notes(summary))


def _notes(summary: dict[str, Any]) -> list[str]:
    """The lines that say what the columns mean where a reader would otherwise guess."""
    dropped = sum(row["paper_dropped"] for row in summary["agents"])
    notes = ["average success, excl. infra, paper rule: means over each agent's 'headline over' tasks (those "
             "tagged paper, when any ran)",
             "paper rule: success counted as the paper's plot.py counts it, which also drops runs that timed out, "
             f"crashed or ran out of GPU memory ({_counted(dropped, 'run')} dropped here; see docs/fidelity.md)"]
    if any(row["expect"] == BASELINE_EXPECT for row in summary["groups"]):
        notes.append("n/a (baseline): the baseline agent runs the unchanged starter, from which improvement is "
                     "measured, so it cannot succeed by definition; its items check the baseline (PASS/FAIL above)")
    if any(row["expect"] == BASELINE_EXPECT and row["baseline_pinned"] for row in summary["groups"]):
        notes.append("pinned: the task's baseline is a fixed placeholder (e.g. fathomnet's 1e-10), not a "
                     "measurement, so the starter's improvement over it is not shown")
    return [textwrap.fill(note, NOTE_WIDTH, subsequent_indent="  ") for note in notes]


def _rate(row: dict[str, Any], rate: str, low: str, high: str) -> str:
    """A success rate with its 95% interval; none for the baseline agent, which cannot succeed."""
    if row["expect"] == BASELINE_EXPECT:
        return "n/a (baseline)"
    if row[rate] is None:
        return "-"
    return f"{row[rate]:.0%} [{row[low]:.0%}, {row[high]:.0%}]"


def _paper_rate(row: dict[str, Any]) -> str:
    """The rate by the paper's rule and its denominator: ``50% of 4``, ``- (1 dropped)`` when it drops every run."""
    if row["expect"] == BASELINE_EXPECT:
        return "n/a"
    if not row["paper_runs"]:
        return f"- ({row['paper_dropped']} dropped)"
    return f"{row['paper_success_rate']:.0%} of {row['paper_runs']}"


def _improvement(row: dict[str, Any]) -> str:
    """The mean improvement; for the baseline agent against a pinned placeholder, it says so instead."""
    if row["expect"] == BASELINE_EXPECT and row["baseline_pinned"] and row["mean_improvement"] is None:
        return "- (pinned)"
    return _percent(row["mean_improvement"])


def _headline(row: dict[str, Any], field: str, label: str = "n/a") -> str:
    return label if row["expect"] == BASELINE_EXPECT else _percent(row[field], signed=False)


def _other_tasks(row: dict[str, Any]) -> str:
    """An agent's average success over its tasks outside the headline, and how many there are."""
    if not row["other_tasks"]:
        return "-"
    rate = _headline(row, "other_average_success_rate")
    return rate if row["expect"] == BASELINE_EXPECT else f"{rate} of {row['other_tasks']}"


def _counted(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _percent(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "-"
    return f"{round(value, 4) + 0.0:+.1%}" if signed else f"{value:.1%}"


def render_table(results: list[RunResult]) -> str:
    import pandas as pd

    rows = []
    for result in sorted(results, key=lambda r: r.nodeid):
        agent = f"{result.agent} ({result.llm})" if result.llm else result.agent
        rows.append({
            "task": result.task, "agent": agent, "seed": result.seed,
            "score": _number(result.score), "baseline": _number(result.baseline),
            "improvement": "- (pinned)" if result.expect == BASELINE_EXPECT and result.baseline_pinned
            else _percent(result.improvement),
            "success": "n/a" if result.expect == BASELINE_EXPECT else "yes" if result.success else "no",
            "steps": result.steps,
            "time": format_duration(result.wall_time),
            "result": _outcome(result),
        })
    frame = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    return frame.to_string(index=False)


def _outcome(result: RunResult) -> str:
    """PASS or FAIL with why; ``(resumed)`` when --mlab-resume took the result from an earlier session."""
    outcome = "PASS" if result.passed else f"FAIL: {result.failure or 'failed'}"
    return f"{outcome} (resumed)" if result.resumed else outcome


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _count(value: float | None) -> str:
    """Token counts read as whole numbers with thousands separators: 15,430, not 1.543e+04."""
    return "-" if value is None else f"{round(value):,}"

"""Write results.json and results.csv, and render the terminal table.

pandas is imported only here, at the end of a session, so collection and workers stay light.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from pytest_mlab.results.record import RunResult
from pytest_mlab.spec.units import format_duration

RESULTS_VERSION = 1
TABLE_COLUMNS = ["task", "agent", "seed", "score", "baseline", "improvement", "success", "steps", "time", "result"]


def write_results(out_dir: Path, results: list[RunResult], settings: dict[str, Any]) -> Path:
    """results.json (documented schema, version field) and results.csv (one row per run)."""
    import pandas as pd

    out_dir.mkdir(parents=True, exist_ok=True)
    ordered = sorted(results, key=lambda r: r.nodeid)
    payload = {"version": RESULTS_VERSION, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "settings": settings, "runs": [result.to_dict() for result in ordered]}
    path = out_dir / "results.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    os.replace(tmp, path)
    frame = pd.DataFrame([result.to_dict() for result in ordered], columns=list(RunResult.__dataclass_fields__))
    frame.to_csv(out_dir / "results.csv", index=False)
    return path


def render_table(results: list[RunResult]) -> str:
    import pandas as pd

    rows = []
    for result in sorted(results, key=lambda r: r.nodeid):
        agent = f"{result.agent} ({result.llm})" if result.llm else result.agent
        rows.append({
            "task": result.task, "agent": agent, "seed": result.seed,
            "score": _number(result.score), "baseline": _number(result.baseline),
            "improvement": "-" if result.improvement is None else f"{round(result.improvement, 4) + 0.0:+.1%}",
            "success": "yes" if result.success else "no", "steps": result.steps,
            "time": format_duration(result.wall_time),
            "result": "PASS" if result.passed else f"FAIL: {result.failure or 'failed'}",
        })
    frame = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    return frame.to_string(index=False)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"

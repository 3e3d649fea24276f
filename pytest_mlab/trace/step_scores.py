"""``step_scores.json`` in a run's folder: the score of every step (--mlab-score-steps), written by
grading and read by the report, so neither needs the other."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

STEP_SCORES = "step_scores.json"


def write_step_scores(run_dir: Path, payload: dict[str, Any]) -> None:
    (run_dir / STEP_SCORES).write_text(json.dumps(payload, indent=1) + "\n")


def saved_step_scores(run_dir: Path | str | None) -> dict[str, Any] | None:
    """What an earlier --mlab-score-steps wrote for this run, or None."""
    if not run_dir:
        return None
    try:
        return json.loads((Path(run_dir) / STEP_SCORES).read_text())
    except (OSError, ValueError):
        return None

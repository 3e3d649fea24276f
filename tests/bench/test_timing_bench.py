"""bench/timing_stability.py --rescore scores recorded gradings with the harness's current
arithmetic: what a change of statistic is judged by. Only the arithmetic is checked, no time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO

#: a grading of llama-inference's unchanged starter against itself on a loaded machine, as --raw wrote it
LUCKY_STARTER = {"task": "llama-inference", "score": 1.389, "seconds": 179.5,
                 "timing": {"repeats": 3, "submission": [14.23, 17.29, 14.15], "starter": [15.39, 14.87, 11.61],
                            "overhead": [5.91, 5.10, 6.05], "slow": False}}


def test_rescoring_recorded_gradings(tmp_path: Path) -> None:
    raw = tmp_path / "raw.jsonl"
    slow = {**LUCKY_STARTER, "score": 4.0, "timing": {**LUCKY_STARTER["timing"], "slow": True}}
    raw.write_text(json.dumps(LUCKY_STARTER) + "\n" + json.dumps(slow) + "\n")
    done = subprocess.run([sys.executable, str(REPO / "bench" / "timing_stability.py"), "--rescore", str(raw)],
                          capture_output=True, text=True, timeout=300, check=False)
    lines = done.stdout.splitlines()
    assert lines[0].split()[:6] == ["llama-inference", "1", "score", "1.153", "inside", "(recorded"], done.stdout
    assert lines[1].split()[:5] == ["llama-inference", "2", "score", "4.000", "OUTSIDE"], done.stdout
    assert lines[-1] == "llama-inference: 1 of 2 inside the tolerance" and done.returncode == 1, done.stdout

"""How the unchanged starter's run ended, read from the baseline agent's trace.

The baseline item judges a submission the starter should have written. A grader may score a
workspace the starter never wrote into (the original vectorization's eval.py returns 1e10 when
submission.csv is missing; a stale file may be left behind), so the verdict also needs to know
whether the starter ran to the end: that is in the Execute Script observation, whose wording
``pytest_mlab/actions/execute.py`` writes (tests/grading/test_starter_run.py keeps the two in step).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from pytest_mlab.errors import EnvError
from pytest_mlab.sandbox.paths import normalize_relpath

EXECUTE = "Execute Script"
ENDING_LINES = 5  # lines of the starter's error output a verdict quotes

_FINISHED = "The script has been executed. Here is the output:"
_FAILED = re.compile(r"The script has been executed and failed with exit code (-?\d+)\. Here is the output:\n?")
_ENV_ERROR = "EnvError: "


@dataclass(frozen=True)
class StarterRun:
    """The starter's last run by Execute Script: its exit code (None when it did not end by
    itself: stopped at the time limit, or it could not start) and the last lines of its output."""

    script: str
    exit_code: int | None
    ending: str

    @property
    def finished(self) -> bool:
        return self.exit_code == 0

    def how(self) -> str:
        """How it ended, in words: 'failed with exit code 1', 'did not run to the end: ...'."""
        if self.exit_code is None:
            return f"did not run to the end ({self.ending.splitlines()[0] if self.ending else 'see the trace'})"
        return "ran to the end (exit code 0)" if self.finished else f"failed with exit code {self.exit_code}"

    def error_ending(self) -> str:
        """The last lines of its error output, indented, for a verdict's message; '' when none."""
        if self.exit_code in (None, 0) or not self.ending:
            return ""
        return "\nthe end of its error output:\n" + "\n".join(f"  {line}" for line in self.ending.splitlines())


def starter_run(records: Iterable[dict[str, Any]], starter: str) -> StarterRun | None:
    """The last Execute Script step of ``starter`` in a run's trace records; None when the run never
    executed it (its verdict then knows nothing of the starter)."""
    found = None
    for record in records:
        if record.get("type") != "step" or record.get("action") != EXECUTE:
            continue
        if _script(record.get("arguments")) == starter:
            found = _ended(starter, str(record.get("observation") or ""))
    return found


def _script(arguments: Any) -> str | None:
    name = arguments.get("script_name") if isinstance(arguments, dict) else None
    try:
        return normalize_relpath(name) if isinstance(name, str) else None
    except EnvError:
        return None


def _ended(starter: str, observation: str) -> StarterRun:
    if observation.startswith(_FINISHED):
        return StarterRun(starter, 0, "")
    failed = _FAILED.match(observation)
    if failed:
        return StarterRun(starter, int(failed.group(1)), _last_lines(observation[failed.end():]))
    said = observation.removeprefix(_ENV_ERROR).strip()  # stopped at its time limit, or missing
    return StarterRun(starter, None, said.splitlines()[0] if said else "")


def _last_lines(output: str) -> str:
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    return "\n".join(lines[-ENDING_LINES:])

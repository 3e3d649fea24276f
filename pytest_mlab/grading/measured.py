"""What task graders read of a measure step (:mod:`.measure`), on the host: plain data only.

``measured/<subject>/<n>/exec.json`` is the harness's record of one execution; ``out/`` next to it
holds what the measure script (and, in the same process, the agent's code) wrote. Graders treat
``out/`` as untrusted input: :meth:`Execution.result` reads a bounded JSON object, and
:func:`load_array` loads ``.npy`` files without pickles and checks what they hold.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from pytest_mlab.errors import GradingError, InvalidSubmission
from pytest_mlab.in_sandbox.mlab_measure import RESULT

SUBMISSION, STARTER, OVERHEAD = "submission", "starter", "overhead"  # the subjects of executions
#: The measure step's record of a timed measurement (in ``measured/``; a run keeps a copy in its folder).
TIMING_FILE = "timing.json"
_RESULT_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Execution:
    """One execution of the measure script, as the harness recorded it."""

    folder: Path  # measured/<subject>/<n>
    subject: str
    index: int
    returncode: int | None
    timed_out: bool
    timeout: float
    cpu_time: float | None
    output_tail: str
    truncated_reason: str | None

    @property
    def out(self) -> Path:
        """What the script wrote to ``.mlab-measure/out``: regular files only."""
        return self.folder / "out"

    def result(self) -> dict[str, Any] | None:
        """``out/result.json`` (what ``mlab_measure.finish`` or ``failure`` wrote) when the
        execution ended by itself and the file holds a JSON object; None otherwise."""
        if self.timed_out or self.truncated_reason:
            return None
        path = self.out / RESULT
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > _RESULT_MAX_BYTES:
                return None
            value = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def failure(self, what: str) -> str:
        """Why this execution gave no result, for a message: ``what`` names what was measured."""
        if self.timed_out:
            return f"{what} did not finish within {self.timeout:.0f} s"
        if self.truncated_reason:
            return f"{what} wrote more output files than a measurement may: {self.truncated_reason}"
        tail = self.output_tail.strip()[-1500:]
        return (f"{what} exited with status {self.returncode} before reporting a result "
                f"(the code ended the process or it crashed); output: {tail or '(none)'}")


def executions(measured: Path, subject: str = SUBMISSION) -> list[Execution]:
    """Every recorded execution of ``subject``, in order (one unless the task is timed), less a
    submission execution the harness stopped at the slow bound (:func:`stopped_as_slow`): it is
    scored as slow, and has no output to check."""
    folders = sorted((p for p in (Path(measured) / subject).glob("*") if p.name.isdigit()), key=lambda p: int(p.name))
    found = [_execution(folder) for folder in folders]
    if subject == SUBMISSION and stopped_as_slow(measured):
        found = [execution for execution in found if not execution.timed_out]
    return found


def _execution(folder: Path) -> Execution:
    record = json.loads((folder / "exec.json").read_text(encoding="utf-8"))
    cpu = record.get("cpu_time")
    return Execution(folder=folder, subject=record["subject"], index=int(folder.name),
                     returncode=record.get("returncode"), timed_out=bool(record.get("timed_out")),
                     timeout=float(record.get("timeout") or 0), cpu_time=float(cpu) if cpu is not None else None,
                     output_tail=str(record.get("output_tail") or ""), truncated_reason=record.get("truncated_reason"))


def load_array(path: Path, label: str):
    """A numeric ``.npy`` array the measurement saved, loaded without pickles; anything else is
    an invalid submission naming ``label`` (what the array should have been)."""
    import numpy as np

    if path.is_symlink() or not path.is_file():
        raise InvalidSubmission(f"{label}: the measurement saved no {path.name}")
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise InvalidSubmission(f"{label}: {path.name} is not a numpy array without pickles ({error})") from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biuf":
        raise InvalidSubmission(f"{label}: expected a numeric array, got {getattr(array, 'dtype', type(array))}")
    return array


def saved_arrays(measured: Path, *, source: str, what: str, stages: dict[str, str], label: str,
                 name: str = "output.npy", unit: str = "run") -> Iterator[tuple[Any, str]]:
    """The array each submission execution saved as ``name``, with where it came from for a
    message (" (timed run 2 of 3)"; "" for a lone execution). An execution that reported no
    result (``what`` names what it measured), or one that failed at a stage of ``stages`` (stage
    -> what went wrong, followed by the detail the script reported), makes the submission invalid,
    in a message that starts with ``source``, the agent's file."""
    runs = executions(measured)
    for run in runs:
        result = run.result()
        if result is None:
            raise InvalidSubmission(f"{source}: " + run.failure(what))
        if result.get("error") in stages:
            raise InvalidSubmission(f"{source}: {stages[result['error']]} {result.get('detail', '')}".rstrip())
        where = f" (timed {unit} {run.index + 1} of {len(runs)})" if len(runs) > 1 else ""
        yield load_array(run.out / name, label), where


def starter_array(measured: Path, name: str = "output.npy"):
    """The array the unchanged starter's first execution saved as ``name``: what the submission's
    outputs are checked against, computed on the same inputs, drawn at this grading (see
    :mod:`pytest_mlab.in_sandbox.mlab_measure`), so no output can be known ahead. The starter
    runs no agent code; an array it did not save is a broken grading, not the agent's failure."""
    runs = executions(measured, STARTER)
    if not runs or runs[0].result() is None or "error" in (runs[0].result() or {}):
        raise GradingError(f"the unchanged starter's measurement reported no result to compare with "
                           f"({runs[0].failure('the starter execution') if runs else 'it did not run'})")
    try:
        return load_array(runs[0].out / name, "the unchanged starter")
    except InvalidSubmission as error:
        raise GradingError(str(error)) from None


def stopped_as_slow(measured: Path) -> bool:
    """Whether the harness's timing record says the submission passed the slow bound (see
    :mod:`pytest_mlab.grading.timing`): its one execution may have been stopped before its output."""
    path = Path(measured) / TIMING_FILE
    return path.is_file() and bool(json.loads(path.read_text(encoding="utf-8")).get("slow"))


def finite_positive(value: Any) -> bool:
    """Whether ``value`` is a real, finite, strictly positive number (a possible duration)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0

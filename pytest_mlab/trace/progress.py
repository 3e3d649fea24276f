"""A run's live status, for whoever watches the session while it runs.

Under pytest-xdist the controller hears of an item only when it ends, so each running run keeps
one small JSON file, ``<out>/.progress/<run folder>.json``: what it is doing (preparing data,
setting up, which step, grading) and since when, removed when the run ends. Each change is one
``pwrite`` of the whole record over the old one at offset 0, padded with spaces to the longest
record so far (never shorter, so no truncation), and no fsync (it is a hint, not a record). The
update costs about 0.01 ms (bench/progress_overhead.py); a new file renamed over the old one cost
0.15 to 0.45 ms on this project's machine (ext4), as much as the cheapest step itself. A reader
that catches a write half done sees JSON that does not parse and skips the file until its next look. Writing it never fails a run. The pytest plugin's
controller polls the folder and renders it.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any

PROGRESS_DIR = ".progress"

# phases, in the order a run goes through them; data preparation names its own (see prepare_data)
SETTING_UP = "setting up"
STEPPING = "step"
GRADING = "grading"
INTERRUPTED = "interrupted, grading"  # Ctrl-C reached the run: it grades its final workspace and stops
SCORING_STEPS = "scoring steps"


@dataclass(frozen=True)
class Status:
    """One run's status as its file holds it. Times are wall-clock seconds (``time.time()``):
    the writer and the reader are different processes."""

    nodeid: str
    run_id: str
    session: str | None
    started: float  # when the run began
    phase: str  # what the run does now, in words ("step": see ``step``)
    since: float  # when the phase (for ``step``: this step) began
    step: int = 0  # the step being taken, from 1; 0 before the first
    max_steps: int = 0
    pid: int = 0  # the process carrying the run out: an xdist controller passes Ctrl-C on to it


def progress_dir(out_dir: Path) -> Path:
    """Where the runs of a results folder keep their status files."""
    return out_dir / PROGRESS_DIR


class RunStatus:
    """Keeps one run's status file current. ``path=None``: a status nobody watches (writes nothing)."""

    def __init__(self, path: Path | None, status: Status) -> None:
        self.path = path
        self.status = status
        self._descriptor: int | None = None
        self._size = 0  # the longest record written: shorter ones are padded to it

    @classmethod
    def start(cls, out_dir: Path, name: str, *, nodeid: str, run_id: str, session: str | None,
              max_steps: int) -> "RunStatus":
        """The status of a run that begins now, written at once."""
        now = time.time()
        folder = progress_dir(out_dir)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass  # then nothing is shown, and the run goes on
        status = cls(folder / f"{name}.json", Status(nodeid, run_id, session, now, SETTING_UP, now,
                                                     max_steps=max_steps, pid=os.getpid()))
        status._write()
        return status

    def phase(self, phase: str) -> None:
        self._set(phase=phase, since=time.time())

    def observe(self, record: dict[str, Any]) -> None:
        """A trace record was written: the ``run`` record opens step 1, and each ``step`` record
        ends its step and opens the next (other records change nothing and cost nothing)."""
        kind = record.get("type")
        if kind == "run":
            self._set(phase=STEPPING, step=1, since=time.time())
        elif kind == "step" and isinstance(record.get("step"), int):
            self._set(phase=STEPPING, step=record["step"] + 1, since=time.time())

    def _set(self, **changes: Any) -> None:
        if self.path is None:
            return
        self.status = replace(self.status, **changes)
        self._write()

    def _write(self) -> None:
        if self.path is None:
            return
        record = json.dumps(vars(self.status)).encode()
        self._size = max(self._size, len(record))
        try:
            if self._descriptor is None:
                # emptied once: a file a killed session left under this name may be longer
                self._descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            os.pwrite(self._descriptor, record.ljust(self._size), 0)
        except OSError:
            pass  # a full or read-only disk must not fail the run over a progress display

    def close(self) -> None:
        """The run is over: its status goes."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def __enter__(self) -> "RunStatus":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


QUIET = RunStatus(None, Status("", "", None, 0.0, SETTING_UP, 0.0))


def read_statuses(out_dir: Path, session: str | None) -> list[Status]:
    """The statuses of this session's running runs, oldest first (a file caught mid-write is skipped)."""
    return sorted((status for _path, status in _session_files(out_dir, session)),
                  key=lambda status: (status.started, status.run_id))


def remove_statuses(out_dir: Path, session: str | None) -> None:
    """What this session's runs left (a worker that died keeps its file): removed at the session's end."""
    for path, _status in _session_files(out_dir, session):
        try:
            os.unlink(path)
        except OSError:
            pass


def _session_files(out_dir: Path, session: str | None) -> list[tuple[Path, Status]]:
    found = []
    try:
        entries = list(os.scandir(progress_dir(out_dir)))
    except OSError:
        return []
    for entry in entries:
        if not entry.name.endswith(".json"):
            continue
        try:
            with open(entry.path, encoding="utf-8") as handle:
                status = Status(**json.load(handle))
        except (OSError, ValueError, TypeError):
            continue
        if status.session == session:
            found.append((Path(entry.path), status))
    return found

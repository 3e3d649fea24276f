"""Results of several sessions in one table: rows are keyed by run id, and the newest row wins.

A session writes its runs into the results.json already in ``--mlab-out``: a run of the same
item (same run id, which also names its run folder, ``runs/<task>-<variant>-<agent>-s<seed>``,
that the new run replaced) replaces the earlier row, every other row stays. ``pytest-mlab report``
rebuilds the same table from one or more results folders, from their results.json and from
their run folders alone, whose trace ends with a ``result`` record holding the full row.
"""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from pytest_mlab.errors import MlabError
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.store import RESULTS_FILE, load_results

LOCK_FILE = ".results.lock"


@dataclass
class Merged:
    """The rows to write, and what became of the results.json that was there."""

    runs: list[RunResult]
    kept: int = 0  # rows of earlier sessions that stay
    set_aside: Path | None = None  # an unreadable results.json, renamed rather than overwritten


def newest_by_run_id(candidates: Iterable[tuple[float, RunResult]]) -> list[RunResult]:
    """One row per run id: the one with the latest time; on a tie, the one given last."""
    chosen: dict[str, tuple[float, RunResult]] = {}
    for stamp, run in candidates:
        if run.run_id not in chosen or stamp >= chosen[run.run_id][0]:
            chosen[run.run_id] = (stamp, run)
    return [run for _stamp, run in chosen.values()]


def with_earlier_runs(out_dir: Path, runs: list[RunResult]) -> Merged:
    """This session's runs plus the rows of the results.json in ``out_dir`` that they do not replace.
    A results.json that cannot be read is renamed (``results.unreadable-<time>.json``), never lost."""
    path = out_dir / RESULTS_FILE
    if not path.exists():
        return Merged(list(runs))
    try:
        saved = load_results(path)["runs"]
    except MlabError:
        aside = path.with_name(f"results.unreadable-{time.strftime('%Y%m%d-%H%M%S')}.json")
        os.replace(path, aside)
        return Merged(list(runs), set_aside=aside)
    ours = {run.run_id for run in runs}
    kept = [row for row in saved if row.run_id not in ours]
    return Merged([*kept, *runs], kept=len(kept))


@contextmanager
def results_lock(out_dir: Path) -> Iterator[None]:
    """Two sessions sharing ``--mlab-out`` that end together merge one after the other."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


@dataclass
class Rebuilt:
    """What ``pytest-mlab report`` found in its folders."""

    runs: list[RunResult]
    settings: dict[str, Any] = field(default_factory=dict)  # of the newest results.json, if any
    unfinished: int = 0  # run folders without a result record (killed mid-run): left out


def rebuilt_results(folders: list[Path]) -> Rebuilt:
    """Every row of every folder's results.json and every graded run folder under its ``runs/``,
    the newest per run id: a results.json row counts as written when the file was, a run folder's
    row when its result record was. A folder with neither is an error."""
    candidates: list[tuple[float, RunResult]] = []
    settings: tuple[float, dict[str, Any]] = (float("-inf"), {})
    unfinished = 0
    for folder in folders:
        found = _run_folders(folder)
        path = folder / RESULTS_FILE
        if path.is_file():
            saved, stamp = load_results(path), path.stat().st_mtime
            candidates += [(stamp, _located(row, folder)) for row in saved["runs"]]
            if stamp >= settings[0]:
                settings = (stamp, saved.get("settings") or {})
        elif not found:
            raise MlabError(f"{folder}: no results.json here and no run folders under runs/; give the "
                            f"--mlab-out folder of a session")
        for trace, last in found:
            if last is not None and last.get("type") == "result":
                row = replace(RunResult.from_dict(last), run_dir=str(trace.parent), trace=str(trace))
                candidates.append((float(last.get("t", 0.0)), row))
            else:
                unfinished += 1
    return Rebuilt(sorted(newest_by_run_id(candidates), key=lambda run: run.nodeid), settings[1], unfinished)


def _run_folders(folder: Path) -> list[tuple[Path, dict[str, Any] | None]]:
    """Each run folder's trace and its last record (None when it has none)."""
    from pytest_mlab.trace.writer import last_record

    return [(trace, last_record(trace)) for trace in sorted((folder / "runs").glob("*/trace.jsonl"))]


def _located(row: RunResult, folder: Path) -> RunResult:
    """A row whose run folder moved with its results folder (a CI artifact downloaded elsewhere)
    points at where the folder is now."""
    if not row.run_dir or Path(row.run_dir).is_dir():
        return row
    moved = folder / "runs" / Path(row.run_dir).name
    return replace(row, run_dir=str(moved), trace=str(moved / "trace.jsonl")) if moved.is_dir() else row

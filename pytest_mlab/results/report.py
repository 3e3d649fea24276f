"""Everything a session (or ``pytest-mlab report``/``rescore``) writes from its results, in order:
results.json and the CSVs first (cheap, never lost), then the plots, then report.html."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_mlab.results.aggregate import aggregate
from pytest_mlab.results.merge import results_lock, with_earlier_runs
from pytest_mlab.results.plots import write_plots
from pytest_mlab.results.html import write_report
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.store import write_results


@dataclass
class Outputs:
    results: Path
    report: Path
    plots: list[Path] = field(default_factory=list)
    kept: int = 0  # rows of earlier sessions kept in results.json (a session's outputs only)
    set_aside: Path | None = None  # an unreadable results.json renamed instead of overwritten


def warm_up() -> threading.Thread:
    """Import what the outputs need (pandas, matplotlib and its Agg backend) in a background thread, started
    once a session knows it has runs: about 1.5 s of CPU that the session's end would otherwise
    wait for after its last run. The thread only imports: the outputs are written at the end, in
    the session's own thread, whether or not it has finished by then."""

    def imports() -> None:
        try:  # the lowest priority (Linux gives each thread its own): the runs' processes go first
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
        try:  # imports only: choosing the backend here could switch it under a figure being drawn
            import matplotlib.backends.backend_agg  # noqa: F401
            import matplotlib.pyplot  # noqa: F401
            import pandas  # noqa: F401
        except Exception:  # noqa: BLE001  (the end of the session imports them again, and says what fails)
            pass

    thread = threading.Thread(target=imports, name="mlab-report-imports", daemon=True)
    thread.start()
    return thread


def write_outputs(out_dir: Path, runs: list[RunResult], settings: dict[str, Any]) -> Outputs:
    results = write_results(out_dir, runs, settings)
    plots = write_plots(out_dir, aggregate(runs))
    report = write_report(out_dir, runs, plots, settings=settings)
    return Outputs(results, report, plots)


def write_session_outputs(out_dir: Path, runs: list[RunResult], settings: dict[str, Any]) -> Outputs:
    """A session's outputs: its runs merged into the results already in ``out_dir`` (a run of the
    same item replaces its row, other rows stay), so a follow-up session never erases a table."""
    with results_lock(out_dir):
        merged = with_earlier_runs(out_dir, runs)
        outputs = write_outputs(out_dir, merged.runs, settings)
    outputs.kept, outputs.set_aside = merged.kept, merged.set_aside
    return outputs

"""Everything a session (or ``pytest-mlab report``/``rescore``) writes from its results, in order:
results.json and the CSVs first (cheap, never lost), then the plots, then report.html."""

from __future__ import annotations

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

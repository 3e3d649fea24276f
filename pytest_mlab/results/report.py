"""Everything a session (or ``pytest-mlab report``/``rescore``) writes from its results, in order:
results.json and the CSVs first (cheap, never lost), then the plots, then report.html."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_mlab.results.aggregate import aggregate
from pytest_mlab.results.plots import write_plots
from pytest_mlab.results.html import write_report
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.store import write_results


@dataclass
class Outputs:
    results: Path
    report: Path
    plots: list[Path] = field(default_factory=list)


def write_outputs(out_dir: Path, runs: list[RunResult], settings: dict[str, Any]) -> Outputs:
    results = write_results(out_dir, runs, settings)
    plots = write_plots(out_dir, aggregate(runs))
    report = write_report(out_dir, runs, plots)
    return Outputs(results, report, plots)

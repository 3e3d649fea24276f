"""Gathers run results on the controller (or the single process without xdist) and reports them once."""

from __future__ import annotations

import re
from dataclasses import asdict

import pytest

from pytest_mlab.results.record import RESULT_PROPERTY, RunResult
from pytest_mlab.results.store import render_table, write_results
from pytest_mlab.spec.plan import Settings

_ITEM_ID = re.compile(r"::(?P<task>[^\[]+)\[(?P<params>[^\]]*)\]$")
_TASK_ITEM = re.compile(r"\.ya?ml::[^\[]+\[[^\]]*\]$")


class ResultsReporter:
    """Registered only where results meet: never on an xdist worker."""

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results: dict[str, RunResult] = {}
        self.results_path = None

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = next((RunResult.from_dict(value) for name, value in report.user_properties
                       if name == RESULT_PROPERTY), None)
        if result is not None:
            self.results[report.nodeid] = result
        elif report.failed and report.nodeid not in self.results and _TASK_ITEM.search(report.nodeid):
            # no result came back: the worker died (xdist reports it) or the harness itself failed
            self.results[report.nodeid] = _crashed_from_report(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.results:
            return
        settings = {key: str(value) if value is not None else None for key, value in asdict(self.settings).items()}
        self.results_path = write_results(self.settings.out_dir, list(self.results.values()), settings)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        terminalreporter.section("pytest-mlab results")
        terminalreporter.write_line(render_table(list(self.results.values())))
        if self.results_path:
            terminalreporter.write_line(f"results: {self.results_path}")


def _crashed_from_report(report: pytest.TestReport) -> RunResult:
    match = _ITEM_ID.search(report.nodeid)
    params = match.group("params").split("-")
    seed = int(params[-1][1:]) if params[-1][1:].isdigit() else 0
    text = str(report.longrepr or "")
    message = text.strip().splitlines()[-1] if text.strip() else "the run crashed without a result"
    return RunResult(
        nodeid=report.nodeid, run_id=f"{match.group('task')}[{match.group('params')}]", task=match.group("task"),
        agent=params[1] if len(params) > 2 else "?", llm=None, seed=seed, variant=params[0], sandbox="?",
        metric="?", direction="?", expect="?", passed=False, score=None, baseline=None, improvement=None,
        success=False, valid=False, invalid_reason=None, end_reason="crashed", failure="crashed",
        message=message, steps=0, wall_time=round(report.duration, 3))

"""Gathers run results on the controller (or the single process without xdist) and reports them once."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import pytest

from pytest_mlab.errors import SpecError
from pytest_mlab.results.record import RESULT_PROPERTY, RunResult
from pytest_mlab.results.store import render_table, write_results
from pytest_mlab.spec.plan import Settings
from pytest_mlab.spec.project import Project

_ITEM_ID = re.compile(r"::(?P<task>[^\[]+)\[(?P<params>[^\]]*)\]$")
_TASK_ITEM = re.compile(r"\.ya?ml::[^\[]+\[[^\]]*\]$")


class ResultsReporter:
    """Registered only where results meet: never on an xdist worker."""

    def __init__(self, settings: Settings, project: Project) -> None:
        self.settings = settings
        self.project = project
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
            self.results[report.nodeid] = _crashed_from_report(report, self.settings, self._agent_names())

    def _agent_names(self) -> list[str]:
        if self.settings.agents:
            return list(self.settings.agents)
        try:
            return self.project.default_agents()
        except SpecError:
            return []

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.results:
            return
        settings = {key: list(value) if isinstance(value, tuple) else str(value) if isinstance(value, Path) else value
                    for key, value in asdict(self.settings).items()}
        self.results_path = write_results(self.settings.out_dir, list(self.results.values()), settings)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        terminalreporter.section("pytest-mlab results")
        terminalreporter.write_line(render_table(list(self.results.values())))
        if self.results_path:
            terminalreporter.write_line(f"results: {self.results_path}")


def _crashed_from_report(report: pytest.TestReport, settings: Settings, agents: list[str]) -> RunResult:
    """Rebuild what we can of a run from its node id: ``task[variant-agent[-llm]-sSEED]``."""
    match = _ITEM_ID.search(report.nodeid)
    params = match.group("params")
    seed_match = re.search(r"-s(\d+)$", params)
    seed = int(seed_match.group(1)) if seed_match else 0
    middle = params[len(settings.variant) + 1:seed_match.start() if seed_match else None]
    agent = next((name for name in sorted(agents, key=len, reverse=True)
                  if middle == name or middle.startswith(name + "-")), middle)
    llm = middle[len(agent) + 1:] or None
    text = str(report.longrepr or "")
    message = text.strip().splitlines()[-1] if text.strip() else "the run crashed without a result"
    return RunResult(
        nodeid=report.nodeid, run_id=f"{match.group('task')}[{params}]", task=match.group("task"),
        agent=agent, llm=llm, seed=seed, variant=settings.variant, sandbox=settings.sandbox,
        metric="?", direction="?", expect="?", passed=False, score=None, baseline=None, improvement=None,
        success=False, valid=False, invalid_reason=None, end_reason="crashed", failure="crashed",
        message=message, steps=0, wall_time=round(report.duration, 3))

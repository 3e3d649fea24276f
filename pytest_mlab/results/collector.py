"""Gathers run results on the controller (or the single process without xdist) and reports them once."""

from __future__ import annotations

import re
from dataclasses import asdict
from pathlib import Path

import pytest

from pytest_mlab.errors import SpecError
from pytest_mlab.results.record import RESULT_PROPERTY, RunResult, unfinished_result
from pytest_mlab.results.recover import WORKER_INPUT, recovered_results
from pytest_mlab.results.budget import Ledger
from pytest_mlab.results.gate import compare, load_reference, missing_groups, render_gate, save_gate
from pytest_mlab.results.store import render_summary, render_table
from pytest_mlab.sandbox.registry import fallback_notice, isolation_record, isolation_warning
from pytest_mlab.spec.plan import Settings
from pytest_mlab.spec.project import Project

_ITEM_ID = re.compile(r"::(?P<task>[^\[]+)\[(?P<params>[^\]]*)\]$")
_TASK_ITEM = re.compile(r"\.ya?ml::[^\[]+\[[^\]]*\]$")


class ResultsReporter:
    """Registered only where results meet: never on an xdist worker."""

    def __init__(self, settings: Settings, project: Project, session: str) -> None:
        self.settings = settings
        self.project = project
        self.session = session
        self.results: dict[str, RunResult] = {}
        self.rebuilt: set[str] = set()  # node ids whose row was rebuilt from a failed report, not a result
        self.outputs = None
        self.problems: list[str] = []
        self.gate_text: str | None = None
        # read the reference now: a wrong --mlab-compare path stops the session before any run
        self.reference = load_reference(settings.compare) if settings.compare else None
        if settings.max_cost is not None:
            Ledger(settings.out_dir).reset()

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session: pytest.Session):
        """After the session header: the loud notice when ``auto`` runs agents' code unconfined."""
        result = yield
        notice = fallback_notice(self.settings.sandbox)
        terminal = session.config.pluginmanager.getplugin("terminalreporter")
        if notice and terminal is not None:
            terminal.write_line(notice, red=True, bold=True)
        return result

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node) -> None:
        """pytest-xdist: each worker writes this session's id in the traces of the runs it carries out."""
        node.workerinput[WORKER_INPUT] = self.session

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = next((RunResult.from_dict(value) for name, value in report.user_properties
                       if name == RESULT_PROPERTY), None)
        if result is not None:
            self.results[report.nodeid] = result
            self.rebuilt.discard(report.nodeid)
        elif report.failed and report.nodeid not in self.results and _TASK_ITEM.search(report.nodeid):
            # no result came back: the worker died (xdist reports it) or the harness itself failed
            self.results[report.nodeid] = _crashed_from_report(report, self.settings, self._agent_names())
            self.rebuilt.add(report.nodeid)

    def _recover(self, interrupted: bool) -> None:
        """Results on disk that no report brought (Ctrl-C, a dead worker) join those that came; a
        graded result on disk also replaces the row rebuilt from a dead worker's report."""
        try:
            graded, unfinished = recovered_results(self.settings.out_dir, self.session, interrupted=interrupted)
        except OSError as exc:
            self.problems.append(f"could not read back this session's runs: {exc}")
            return
        for result in graded:
            if result.nodeid not in self.results or result.nodeid in self.rebuilt:
                self.results[result.nodeid] = result
                self.rebuilt.discard(result.nodeid)
        for result in unfinished:
            self.results.setdefault(result.nodeid, result)

    def _agent_names(self) -> list[str]:
        if self.settings.agents:
            return list(self.settings.agents)
        try:
            return self.project.default_agents()
        except SpecError:
            return []

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session):
        """Innermost wrapper: what it writes comes after xdist has stopped its workers (they finish
        the runs they were carrying out when Ctrl-C came) and before the terminal summary."""
        try:
            return (yield)
        finally:
            self._recover(interrupted=session.exitstatus == pytest.ExitCode.INTERRUPTED)
            self._write(session)

    def _write(self, session: pytest.Session) -> None:
        if not self.results:
            return
        from pytest_mlab.results.report import write_outputs

        runs = list(self.results.values())
        settings = {key: list(value) if isinstance(value, tuple) else str(value) if isinstance(value, Path) else value
                    for key, value in asdict(self.settings).items()}
        settings.update(isolation_record(self.settings.sandbox, (run.sandbox for run in runs)))
        try:
            self.outputs = write_outputs(self.settings.out_dir, runs, settings)
        except (OSError, SpecError) as exc:  # the results table still prints below
            self.problems.append(f"could not write the report: {exc}")
        if self.settings.save_gate:
            save_gate(self.settings.save_gate, runs)
        if self.reference is not None:
            rows = compare(self.reference, runs, self.settings.max_drop)
            self.gate_text = render_gate(rows, self.settings.max_drop, missing_groups(self.reference, runs))
            if any(row.regressed for row in rows):
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.results:
            return
        runs = list(self.results.values())
        terminalreporter.section("pytest-mlab results")
        terminalreporter.write_line(render_table(runs))
        terminalreporter.write_line("")
        terminalreporter.write_line(render_summary(runs))
        for problem in self.problems:
            terminalreporter.write_line(problem, red=True)
        isolation = isolation_warning(self.settings.sandbox, (run.sandbox for run in runs))
        if isolation:
            terminalreporter.write_line(isolation, yellow=True, bold=True)
        if self.outputs:
            terminalreporter.write_line(f"results: {self.outputs.results}")
            terminalreporter.write_line(f"report: {self.outputs.report}")
        if self.settings.save_gate:
            terminalreporter.write_line(f"gate file: {self.settings.save_gate}")
        if self.gate_text:
            terminalreporter.section("pytest-mlab regression gate", red="REGRESSED" in self.gate_text)
            terminalreporter.write_line(self.gate_text)


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
    return unfinished_result(
        nodeid=report.nodeid, run_id=f"{match.group('task')}[{params}]", task=match.group("task"),
        agent=agent, llm=llm, seed=seed, variant=settings.variant, sandbox=settings.sandbox,
        end_reason="crashed", message=message, wall_time=round(report.duration, 3))

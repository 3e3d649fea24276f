"""Gathers run results on the controller (or the single process without xdist) and reports them once.
The results modules that write, compare and print them are imported when there is a result, so
a session that runs nothing does not load them."""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from pytest_mlab.errors import MlabError
from pytest_mlab.plugin.junit import attached_result
from pytest_mlab.plugin.state import UNMET_PROPERTY, run_items
from pytest_mlab.results.record import JudgedBy, RunIdentity, RunResult
from pytest_mlab.results.recover import recovered_results
from pytest_mlab.sandbox.registry import fallback_notice, isolation_record, isolation_warning
from pytest_mlab.spec.plan import Settings
from pytest_mlab.spec.suffixes import SPEC_SUFFIXES

if TYPE_CHECKING:
    from pytest_mlab.spec.project import Project

_TASK_ITEM = re.compile(r"\.ya?ml::[^\[]+\[[^\]]*\]$")


class ResultsReporter:
    """Registered only where results meet: never on an xdist worker."""

    def __init__(self, settings: Settings, project: Callable[[], Project], session: str, *,
                 allow_skips: bool = False) -> None:
        """``project``: the session's specs, asked for only when a row has to be rebuilt from a
        report (reading specs is not paid by sessions that never need it). ``allow_skips``: a
        session in which nothing ran, for unmet requirements, still passes (--mlab-allow-skips)."""
        self.settings = settings
        self.allow_skips = allow_skips
        self.ran = False  # some item's test call ran (a run, a resumed run, or any other test)
        self.unmet: dict[str, str] = {}  # node id -> why this machine could not run it
        self.nothing_ran: str | None = None  # the line that says why the session failed
        self.project = project
        self.session = session
        self.announced = False
        self.results: dict[str, RunResult] = {}
        self.rebuilt: set[str] = set()  # node ids whose row was rebuilt from a failed report, not a result
        self.outputs = None
        self.problems: list[str] = []
        self.config: pytest.Config | None = None  # for pytest_mlab_run_finished; known from the session's start
        self.finished: set[str] = set()  # node ids whose run pytest_mlab_run_finished has heard of
        self.hook_failures = 0
        self.gate_text: str | None = None
        self.warming: threading.Thread | None = None  # the report's imports, started once runs are known
        # read the reference now: a wrong --mlab-compare path stops the session before any run
        self.reference = None
        if settings.compare:
            from pytest_mlab.results.gate import load_reference

            self.reference = load_reference(settings.compare)
        if settings.max_cost is not None:
            from pytest_mlab.results.budget import Ledger

            Ledger(settings.out_dir).reset()

    @pytest.hookimpl
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.config = session.config

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Before the first run, without xdist: the loud notice when ``auto`` runs agents' code
        unconfined. Only sessions with runs pay for the probe that tells."""
        if run_items(session.items):
            self._announce(session.config)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids: list[str]) -> None:
        """The same under xdist: workers have collected, nothing is scheduled yet."""
        if any(nodeid.split("::")[0].endswith(SPEC_SUFFIXES) for nodeid in ids):
            self._announce(node.config)

    def _announce(self, config: pytest.Config) -> None:
        if self.announced:
            return
        self.announced = True
        from pytest_mlab.plugin.notices import unused_llm_notice
        from pytest_mlab.results.report import warm_up

        if not config.option.collectonly:  # it runs nothing and writes no report
            self.warming = warm_up()  # the report's libraries load while the runs go on

        terminal = config.pluginmanager.getplugin("terminalreporter")
        if terminal is None:
            return
        notice = fallback_notice(self.settings.sandbox)
        if notice:
            terminal.write_line(notice, red=True, bold=True)
        unused = unused_llm_notice(config)
        if unused:
            terminal.write_line(unused, yellow=True, bold=True)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._count(report)
        result = attached_result(report.user_properties)
        if result is not None:
            self.results[report.nodeid] = result
            self.rebuilt.discard(report.nodeid)
        elif report.failed and report.nodeid not in self.results and _TASK_ITEM.search(report.nodeid):
            # no result came back: the worker died (xdist reports it) or the harness itself failed
            result = self.results[report.nodeid] = self._crashed_from_report(report)
            self.rebuilt.add(report.nodeid)
        if result is not None:
            self._run_finished(result)

    def _run_finished(self, result: RunResult) -> None:
        """Users' pytest_mlab_run_finished hooks, once per run (the result rides on the call's and
        the teardown's report); one that fails is told of at the end, and the session goes on."""
        if self.config is None or result.nodeid in self.finished:
            return
        self.finished.add(result.nodeid)
        try:
            self.config.hook.pytest_mlab_run_finished(result=result, config=self.config)
        except Exception as exc:  # noqa: BLE001 - a user's hook must not cost the session its results
            self.hook_failures += 1
            if self.hook_failures == 1:
                self.problems.append(f"a pytest_mlab_run_finished hook failed on {result.run_id}: "
                                     f"{type(exc).__name__}: {exc}")

    def _count(self, report: pytest.TestReport) -> None:
        """What the all-skipped check needs: whether anything ran, and the skips this machine caused."""
        if report.skipped:
            reason = next((value for name, value in report.user_properties if name == UNMET_PROPERTY), None)
            if reason is not None:
                self.unmet.setdefault(report.nodeid, str(reason))
        elif report.when == "call":
            self.ran = True

    def _check_something_ran(self, session: pytest.Session) -> None:
        """A session that passed without running anything, because this machine lacks what the runs
        need (an API key, data, a package), fails: CI must not go green on a missing secret. Skips
        for the budget (--mlab-max-cost) are not unmet requirements."""
        if self.ran or not self.unmet or self.allow_skips or session.exitstatus != pytest.ExitCode.OK:
            return
        nodeid, reason = next(iter(self.unmet.items()))
        self.nothing_ran = (f"pytest-mlab: no run ran: {len(self.unmet)} skipped for an unmet requirement, e.g. "
                            f"{nodeid.partition('::')[2] or nodeid}: {reason}; exit code "
                            f"{int(pytest.ExitCode.USAGE_ERROR)}. Fix that, or pass --mlab-allow-skips to let such "
                            f"a session pass")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def _recover(self, interrupted: bool) -> None:
        """Results on disk that no report brought (Ctrl-C, a dead worker) join those that came; a
        graded result on disk also replaces the row rebuilt from a dead worker's report, and an
        ungraded one lends it the identity its trace recorded (the report keeps how it ended)."""
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
            if result.nodeid in self.rebuilt:
                rebuilt = self.results[result.nodeid]
                self.results[result.nodeid] = replace(result, end_reason=rebuilt.end_reason, failure=rebuilt.failure,
                                                      message=rebuilt.message,
                                                      wall_time=rebuilt.wall_time or result.wall_time)
            else:
                self.results.setdefault(result.nodeid, result)

    def _crashed_from_report(self, report: pytest.TestReport) -> RunResult:
        """The row of an item whose worker died or whose harness failed: its identity comes from
        the same run plan the worker compiled, found again by the item's name."""
        file, _, name = report.nodeid.partition("::")
        text = str(report.longrepr or "").strip()
        message = text.splitlines()[-1] if text else "the run crashed without a result"
        from pytest_mlab.plugin.items import compile_file

        try:
            project = self.project()
            _task, plans = compile_file(self.settings, project, project.root / file)
            plan = next(plan for plan in plans if plan.run_id == name)
        except (MlabError, OSError, StopIteration):  # the spec changed under the session: keep what the id says
            identity = RunIdentity(nodeid=report.nodeid, run_id=name, task=name.partition("[")[0], agent="?",
                                   llm=None, seed=0, variant=self.settings.variant, sandbox=self.settings.sandbox)
            return RunResult.crashed(identity, message, wall_time=round(report.duration, 3))
        return RunResult.crashed(RunIdentity.of_plan(plan, report.nodeid, self.settings.sandbox), message,
                                 judged=JudgedBy.of_plan(plan), wall_time=round(report.duration, 3))

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session):
        """Innermost wrapper: what it writes comes after xdist has stopped its workers (they finish
        the runs they were carrying out when Ctrl-C came) and before the terminal summary."""
        try:
            return (yield)
        finally:
            if self.warming is not None:  # never import them in two threads at once (matplotlib's
                self.warming.join()       # circular imports would see half-made modules)
            self._recover(interrupted=session.exitstatus == pytest.ExitCode.INTERRUPTED)
            self._write(session)
            self._check_something_ran(session)

    def _write(self, session: pytest.Session) -> None:
        if not self.results:
            return
        from pytest_mlab.results.environment import describe_environment
        from pytest_mlab.results.gate import compare, missing_groups, render_gate, save_gate
        from pytest_mlab.results.report import write_session_outputs

        runs = list(self.results.values())
        settings = {key: list(value) if isinstance(value, tuple) else str(value) if isinstance(value, Path) else value
                    for key, value in asdict(self.settings).items()}
        settings.update(isolation_record(self.settings.sandbox, (run.sandbox for run in runs)))
        settings["environment"] = describe_environment(self.settings.invocation_dir)  # the report's header
        try:
            self.outputs = write_session_outputs(self.settings.out_dir, runs, settings)
        except (OSError, MlabError) as exc:  # the results table still prints below
            self.problems.append(f"could not write the report: {exc}")
        else:
            if self.outputs.set_aside:
                self.problems.append(f"the results.json already in {self.settings.out_dir} could not be read: it was "
                                     f"kept as {self.outputs.set_aside.name}, and results.json holds this session only")
        if self.settings.save_gate:
            save_gate(self.settings.save_gate, runs)
        if self.reference is not None:
            rows = compare(self.reference, runs, self.settings.max_drop)
            self.gate_text = render_gate(rows, self.settings.max_drop, missing_groups(self.reference, runs))
            if any(row.regressed for row in rows):
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.nothing_ran:
            terminalreporter.write_line(self.nothing_ran, red=True, bold=True)
        if not self.results:
            return
        from pytest_mlab.results.store import render_summary, render_table

        runs = list(self.results.values())
        terminalreporter.section("pytest-mlab results")
        terminalreporter.write_line(render_table(runs))
        terminalreporter.write_line("")
        terminalreporter.write_line(render_summary(runs))
        more = [f"pytest_mlab_run_finished hooks failed on {self.hook_failures} runs in all"] \
            if self.hook_failures > 1 else []
        for problem in [*self.problems, *more]:
            terminalreporter.write_line(problem, red=True)
        isolation = isolation_warning(self.settings.sandbox, (run.sandbox for run in runs))
        if isolation:
            terminalreporter.write_line(isolation, yellow=True, bold=True)
        if self.outputs:
            kept = f" ({self.outputs.kept} row(s) of earlier sessions kept)" if self.outputs.kept else ""
            terminalreporter.write_line(f"results: {self.outputs.results}{kept}")
            terminalreporter.write_line(f"report: {self.outputs.report}")
        if self.settings.save_gate:
            terminalreporter.write_line(f"gate file: {self.settings.save_gate}")
        if self.gate_text:
            terminalreporter.section("pytest-mlab regression gate", red="REGRESSED" in self.gate_text)
            terminalreporter.write_line(self.gate_text)


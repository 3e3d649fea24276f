"""pytest hooks only: options, collection of Task specs into items, result reporting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mlab.errors import MlabError, SpecError, UsageError
from pytest_mlab.llm.providers import HUMAN
from pytest_mlab.llm.providers import unavailable as llm_unavailable
from pytest_mlab.options import add_options, read_settings, spec_folder
from pytest_mlab.results.record import RESULT_PROPERTY
from pytest_mlab.results.recover import session_id
from pytest_mlab.spec.library import SPEC_SUFFIXES
from pytest_mlab.spec.plan import RunPlan, Settings, compile_plans, unmet_requirement
from pytest_mlab.spec.project import Project

SETTINGS = pytest.StashKey[Settings]()
PREPARED = pytest.StashKey[set]()
PROJECT = pytest.StashKey[Project]()
SESSION = pytest.StashKey[str]()  # the controller's id, shared by its workers: written in each run's trace
_TASK_KIND = re.compile(r"^kind:\s*['\"]?Task['\"]?\s*(#.*)?$", re.MULTILINE)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "mlab: a pytest-mlab run of an agent on a task")
    try:
        settings = read_settings(config)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    project = Project(config.rootpath, spec_folder(config, "mlab_actions_dir"),
                      spec_folder(config, "mlab_agents_dir"), spec_folder(config, "mlab_tasks_dir"))
    for name in settings.agents:
        try:
            project.agent(name, wanted_by=(settings.agents_source, None, ""))
        except SpecError as exc:
            raise pytest.UsageError(str(exc)) from None
    if HUMAN in (settings.llm, settings.fast_llm, settings.edit_llm) and _parallel(config):
        raise pytest.UsageError("--llm=human reads your answers from the terminal, which pytest-xdist workers "
                                "do not have: drop -n (and --dist) to play the agent yourself")
    config.stash[SETTINGS] = settings
    config.stash[PROJECT] = project
    config.stash[SESSION] = session_id(getattr(config, "workerinput", None))
    if not hasattr(config, "workerinput"):
        from pytest_mlab.results.collector import ResultsReporter

        try:
            reporter = ResultsReporter(settings, project, config.stash[SESSION])
        except MlabError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.pluginmanager.register(reporter, "mlab-results")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """pytest-html shows a run's message and links to its trace (when pytest-html is installed)."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and isinstance(item, MlabItem):
        result = next((value for name, value in item.user_properties if name == RESULT_PROPERTY), None)
        if result is not None:
            from pytest_mlab.results.junit import html_extras

            report.extras = [*getattr(report, "extras", []), *html_extras(result)]


def pytest_collection_finish(session: pytest.Session) -> None:
    """--mlab-prepare without xdist: prepare the selected items' data before the first run."""
    if session.config.stash[SETTINGS].prepare and not hasattr(session.config, "workerinput"):
        _prepare_selected(session.config, [item.plan.task for item in session.items if isinstance(item, MlabItem)])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    """--mlab-prepare under xdist: workers report the selected items; the controller prepares their
    data before it schedules any."""
    config = node.config
    if config.stash[SETTINGS].prepare:
        files = dict.fromkeys(nodeid.split("::")[0] for nodeid in ids)
        _prepare_selected(config, [config.stash[PROJECT].task_from_file(config.rootpath / name) for name in files])


def _prepare_selected(config: pytest.Config, tasks: list) -> None:
    """Each task once, skipping tasks that are skipped anyway; output goes to the user's terminal."""
    from pytest_mlab.data import prepare_verbosely

    settings, done = config.stash[SETTINGS], config.stash.setdefault(PREPARED, set())
    reporter = config.pluginmanager.getplugin("terminalreporter")
    capture = config.pluginmanager.getplugin("capturemanager")
    for task in tasks:
        if task.name in done or unmet_requirement(task, settings.variant, settings.cache_dir, preparing=True):
            continue
        done.add(task.name)
        with capture.global_and_fixture_disabled():
            try:
                prepare_verbosely(task, settings.variant, settings.cache_dir,
                                  lambda line: (reporter.write_line(line), reporter.flush()))
            except MlabError as exc:
                pytest.exit(f"--mlab-prepare: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_sessionstart(session: pytest.Session) -> None:
    """What killed sessions or workers left (docker containers, temp folders, cgroups and what
    still runs in them) is removed before any item runs."""
    _remove_dead_containers(session.config)
    _sweep_leftovers(session.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Those of workers that died during this session are removed after it."""
    _remove_dead_containers(session.config)
    _sweep_leftovers(session.config)


def _sweep_leftovers(config: pytest.Config) -> None:
    """On the controller only: workers' leftovers are judged by whether their worker is alive."""
    if not hasattr(config, "workerinput"):
        from pytest_mlab.sandbox.leftovers import sweep

        sweep()


def _remove_dead_containers(config: pytest.Config) -> None:
    from pytest_mlab.sandbox.registry import resolve_kind

    if hasattr(config, "workerinput") or SETTINGS not in config.stash:
        return
    if resolve_kind(config.stash[SETTINGS].sandbox) == "docker":
        from pytest_mlab.sandbox.docker import remove_leftovers

        try:
            remove_leftovers()
        except MlabError as exc:
            raise pytest.UsageError(f"--sandbox=docker: {exc}") from None


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    """Task specs: any YAML with ``kind: Task``, and everything in ``specs/tasks/`` (so a broken
    ``kind:`` line there is an error, not a silently skipped file)."""
    if file_path.suffix not in SPEC_SUFFIXES:
        return None
    in_task_folder = file_path.parent.name == "tasks" and file_path.parent.parent.name == "specs"
    if in_task_folder or _TASK_KIND.search(_head(file_path)):
        return TaskFile.from_parent(parent, path=file_path)
    return None


def _parallel(config: pytest.Config) -> bool:
    """True under pytest-xdist (on the controller: -n N with N > 0; on a worker: always)."""
    return hasattr(config, "workerinput") or bool(getattr(config.option, "numprocesses", None))


def _head(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(65536)
    except OSError:
        return ""


class TaskFile(pytest.File):
    """One Task spec: yields an item per (agent, seed) for the session's data variant."""

    def collect(self):
        config = self.config
        settings, project = config.stash[SETTINGS], config.stash[PROJECT]
        task = project.task_from_file(self.path)
        names = list(settings.agents) or project.default_agents()
        if not names:
            raise SpecError(task.source, task.line, "", f"no agent to run: pass --agent=NAME, or mark an agent in "
                                                        f"{spec_folder(config, 'mlab_agents_dir')} with 'default: true'")
        agents = []
        for name in names:
            agent = project.agent(name, wanted_by=(settings.agents_source, None, ""))
            agents.append((agent, project.agent_actions(agent)))
        skip_reason = unmet_requirement(task, settings.variant, settings.cache_dir, preparing=settings.prepare)
        _register_tags(config, task.tags)
        for plan in compile_plans(task, agents, settings):
            item = MlabItem.from_parent(self, name=plan.run_id, plan=plan)
            for tag in task.tags:
                item.add_marker(tag)
            item.add_marker("mlab")
            reason = skip_reason or (llm_unavailable(plan.llms, task.name) if plan.llms else None)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
            yield item

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, MlabError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


def _register_tags(config: pytest.Config, tags: tuple[str, ...]) -> None:
    """Task tags are markers; registering them keeps ``--strict-markers`` users working."""
    known = {line.split(":")[0].strip() for line in config.getini("markers")}
    for tag in tags:
        if tag not in known:
            config.addinivalue_line("markers", f"{tag}: task tag from a pytest-mlab Task spec")


class RunFailed(Exception):
    """The run did not meet its assertion; the message is the whole story, no traceback needed."""


class MlabItem(pytest.Item):
    def __init__(self, *, plan: RunPlan, **kwargs) -> None:
        super().__init__(**kwargs)
        self.plan = plan

    def runtest(self) -> None:
        from pytest_mlab.results import runs
        from pytest_mlab.results.junit import attach

        settings = self.config.stash[SETTINGS]
        result = runs.resumed(self.plan, self.nodeid, settings)
        if result is None:
            stop = runs.budget_stop(settings)
            if stop:
                pytest.skip(stop)
            result = self._execute()
            result = runs.after_run(self.plan, result, settings)
        attach(self, result)
        if not result.passed:
            where = f"\ntrace: {Path(result.trace).resolve()}" if result.trace else ""
            raise RunFailed(f"{result.message}{where}")

    def _execute(self):
        from pytest_mlab.runner import crashed_result, execute

        console = None
        if HUMAN in self.plan.llms.values():
            from pytest_mlab.llm.human import terminal_console

            console = terminal_console(self.config)
        try:
            result = execute(self.plan, self.nodeid, console=console, session=self.config.stash[SESSION])
        except MlabError as exc:
            result = crashed_result(self.plan, self.nodeid, str(exc))
        return result

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (RunFailed, MlabError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, self.plan.task.line - 1, self.name

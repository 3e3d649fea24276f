"""pytest-mlab's pytest glue, and nothing else: the hooks pytest calls (this module, the entry
point ``mlab``), the items (items.py), options (options.py), the results reporter (reporter.py),
JUnit and pytest-html properties (junit.py), notices before the first run (notices.py), the
order runs go out to xdist workers in (order.py) and how xdist hands them out (schedule.py), the checks of the session's models, asked once
and handed to workers (model_checks.py), the terminal for a human LLM (console.py), the
plugin's own hooks (hookspecs.py) and what their implementations add (extensions.py).

The engine (runner, spec, sandbox, env, agents, llm, grading, results) imports no pytest. Every
engine import here is deferred to the hook that needs it, so a pytest run that collects no spec
pays almost nothing for the plugin.
"""

from __future__ import annotations

import gc
import re
from pathlib import Path

import pytest

from pytest_mlab.errors import MlabError, SpecError, UsageError
from pytest_mlab.plugin.options import (DOCKER_HOSTS, GPU_POOL, add_options, allow_skips, docker_hosts, gpu_pool,
                                        options_given, read_settings)
from pytest_mlab.plugin.state import (ACTIVE, KEYS_HELD, SESSION, SETTINGS, WORKER_INPUT, WORKER_KEYS, is_run_item,
                                      project_of, run_items, session_id)
from pytest_mlab.spec.suffixes import SPEC_SUFFIXES

PREPARED = pytest.StashKey[set]()
SWEPT = pytest.StashKey[bool]()  # leftovers were removed before the first run: again at the end
RUNTIME_READY = pytest.StashKey[bool]()  # the task runtime was checked (and built) before the first run
_TASK_KIND = re.compile(r"^kind:\s*['\"]?Task['\"]?\s*(#.*)?$", re.MULTILINE)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """Only what every session needs: the marker and the session's id (workers get the
    controller's). The rest waits for :func:`activate`: at once when the user set a pytest-mlab
    option, else when the first Task spec is collected, so a session without specs imports little
    beyond this module."""
    config.addinivalue_line("markers", "mlab: a pytest-mlab run of an agent on a task")
    workerinput = getattr(config, "workerinput", None)
    config.stash[SESSION] = session_id(workerinput)
    if workerinput is not None and WORKER_KEYS in workerinput:
        _hold_keys(config, workerinput[WORKER_KEYS])
    if options_given(config):
        activate(config)
    elif _parallel(config) and workerinput is None:
        _hold_keys(config)  # before xdist starts its workers: none inherits a key (llm/secrets.py)


def _hold_keys(config: pytest.Config, handed: dict[str, str] | None = None) -> None:
    """The API keys out of this process's environment (llm/secrets.py), or, on a worker, those the
    controller took, handed over with the worker's input."""
    from pytest_mlab.llm import secrets

    secrets.take_from_environment()
    if handed:
        secrets.adopt(handed)
    config.stash[KEYS_HELD] = True


def activate(config: pytest.Config, session: pytest.Session | None = None) -> None:
    """pytest-mlab's set-up, once per process: plugins' extensions, the settings (bad option values
    are usage errors), the session's models, and on the controller the results reporter and the
    progress display. ``session``: the session has started already (activated by collection), so
    the registered plugins are told of its start here."""
    if config.stash.get(ACTIVE, False):
        return
    config.stash[ACTIVE] = True
    _hold_keys(config)  # before any sandbox, grader or recipe starts
    from pytest_mlab.plugin.extensions import apply_extensions

    apply_extensions(config)  # plugins' backends, providers and agents, before the options are checked
    try:
        settings = read_settings(config)
        skips_allowed = allow_skips(config)
        config.stash[GPU_POOL] = gpu_pool(config)
        config.stash[DOCKER_HOSTS] = docker_hosts(config, settings.sandbox)
    except UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SETTINGS] = settings
    for name in settings.agents:
        try:
            project_of(config).agent(name, wanted_by=(settings.agents_source, None, ""))
        except SpecError as exc:
            raise pytest.UsageError(str(exc)) from None
    typed_models = any((settings.llm, settings.fast_llm, settings.edit_llm))
    if typed_models and not hasattr(config, "workerinput"):  # workers get the answers with their workerinput
        from pytest_mlab.plugin.model_checks import check_typed_models

        try:
            check_typed_models(config)
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
    if typed_models and _parallel(config):
        from pytest_mlab.llm.providers import HUMAN

        if HUMAN in (settings.llm, settings.fast_llm, settings.edit_llm):
            raise pytest.UsageError("--llm=human reads your answers from the terminal, which pytest-xdist workers "
                                    "do not have: drop -n (and --dist) to play the agent yourself")
    from pytest_mlab.sandbox.docker.hosts import use_pool

    use_pool(config.stash[DOCKER_HOSTS], getattr(config, "workerinput", {}).get("workerid"), config.stash[SESSION])
    if not hasattr(config, "workerinput"):
        from pytest_mlab.plugin.reporter import ResultsReporter

        try:
            reporter = ResultsReporter(settings, lambda: project_of(config), config.stash[SESSION],
                                       allow_skips=skips_allowed)
        except MlabError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.pluginmanager.register(reporter, "mlab-results")
        from pytest_mlab.plugin.progress import register_progress

        register_progress(config)
        if _parallel(config):  # Ctrl-C reaches the workers' runs, which grade before xdist stops them
            from pytest_mlab.plugin.interrupts import CtrlCRelay

            config.pluginmanager.register(CtrlCRelay(settings.out_dir, config.stash[SESSION]), "mlab-ctrl-c")
        if session is not None:
            reporter.pytest_sessionstart(session)
            progress = config.pluginmanager.get_plugin("mlab-progress")
            if progress is not None:
                progress.pytest_sessionstart(session)


def _activated_by_collection(config: pytest.Config, session: pytest.Session | None) -> None:
    """:func:`activate` from a collection hook, where pytest shows a UsageError as an internal
    error: it ends the session the way a usage error at start-up does."""
    try:
        activate(config, session)
    except pytest.UsageError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """pytest-html shows a run's message and links to its trace (when pytest-html is installed)."""
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and getattr(item, "mlab_result", None) is not None:
        from pytest_mlab.plugin.junit import html_extras

        report.extras = [*getattr(report, "extras", []), *html_extras(item.mlab_result)]


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    """The garbage collector pauses while specs are collected: thousands of small objects are
    made and all stay alive, so its passes find nothing to free and cost a fifth of the time.
    When specs were collected, what collection made is then frozen (kept out of later passes:
    items live all session), so the full collections pytest runs at its end do not walk it again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return (yield)
    finally:
        if run_items(session.items):
            gc.freeze()
        if was_enabled:
            gc.enable()


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector):
    """The session collects the check of the Agent and Action files last, after what it was asked
    for: the check knows by then whether any Task spec was collected (else it does nothing)."""
    report = yield
    if isinstance(collector, pytest.Session) and report.passed and collector.config.stash.get(ACTIVE, False):
        from pytest_mlab.plugin.items import SpecCheck

        report.result.append(SpecCheck.from_parent(collector, name="mlab-specs"))
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist, the runs of one task go out interleaved with the other tasks' runs, so
    different workers take them (plugin/order.py)."""
    if _parallel(config) and run_items(items):
        from pytest_mlab.plugin.order import interleaved

        items[:] = interleaved(items, lambda item: item.plan.task.name if is_run_item(item) else None)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Without xdist, when runs were collected: leftovers are removed, and with --mlab-prepare the
    selected items' data is prepared, before the first run."""
    if SETTINGS not in session.config.stash:  # pytest-mlab is not active: no spec, no option of it
        if session.config.stash.get(KEYS_HELD, False):
            from pytest_mlab.llm.secrets import release

            release()  # a project's own tests under xdist see the keys they were started with
        return
    if run_items(session.items):
        _remove_leftovers(session.config)
        _ready_runtime(session.config)
    if session.config.stash[SETTINGS].prepare and not hasattr(session.config, "workerinput"):
        tasks = [item.plan.task for item in run_items(session.items)]
        _prepare_selected(session.config, tasks)


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """Said right after "collected N items" (also under --collect-only): the selected tasks that
    have no baseline for the session's data variant."""
    runs = run_items(items)
    if not runs:
        return []
    from pytest_mlab.plugin.notices import missing_baseline_notice

    notice = missing_baseline_notice(runs)
    return [notice] if notice else []


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    """Under xdist, workers report the selected items; when they include runs, the controller
    removes leftovers and, with --mlab-prepare, prepares their data before it schedules any."""
    config = node.config
    if not any(Path(nodeid.split("::")[0]).suffix in SPEC_SUFFIXES for nodeid in ids):
        return
    if not config.stash.get(ACTIVE, False):
        _activated_by_collection(config, config.pluginmanager.get_plugin("session"))
        reporter = config.pluginmanager.get_plugin("mlab-results")
        if reporter is not None:  # registered just now: this call of the hook went out without it
            reporter.pytest_xdist_node_collection_finished(node, ids)
    try:
        _remove_leftovers(config)
    except pytest.UsageError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    _ready_runtime(config)
    if config.stash[SETTINGS].prepare:
        files = dict.fromkeys(nodeid.split("::")[0] for nodeid in ids)
        _prepare_selected(config, [project_of(config).task_from_file(config.rootpath / name) for name in files])


def _ready_runtime(config: pytest.Config) -> None:
    """The locked task runtime (task_runtime/), built on the controller before the first run where
    this machine has none yet, with uv's progress on the user's terminal; workers then find it.
    Not for --collect-only, which runs nothing."""
    if hasattr(config, "workerinput") or config.option.collectonly or config.stash.get(RUNTIME_READY, False):
        return
    config.stash[RUNTIME_READY] = True
    from pytest_mlab.task_runtime.build import ensure_built, is_built, runtime_folder
    from pytest_mlab.task_runtime.choice import LOCKED, selected

    try:
        if selected() != LOCKED or is_built(runtime_folder()):
            return
        reporter = config.pluginmanager.getplugin("terminalreporter")
        capture = config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            ensure_built(progress=lambda line: (reporter.write_line(f"task runtime: {line}"), reporter.flush()))
    except MlabError as exc:
        pytest.exit(f"task runtime: {exc}", returncode=pytest.ExitCode.USAGE_ERROR)


def _prepare_selected(config: pytest.Config, tasks: list) -> None:
    """Each task once, skipping tasks that are skipped anyway; output goes to the user's terminal."""
    from pytest_mlab.data import prepare_verbosely
    from pytest_mlab.data.requirements import unmet_requirement

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


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Leftovers of workers that died during a session that ran runs are removed after it."""
    if session.config.stash.get(SWEPT, False):
        _remove_leftovers(session.config, again=True)


def _remove_leftovers(config: pytest.Config, *, again: bool = False) -> None:
    """What killed sessions or workers left (docker containers, temp folders, cgroups and what
    still runs in them), removed once runs were collected and before any starts, and again at the
    session's end; a session that collects no run never imports the sandbox backends for it. On
    the controller only: workers' leftovers are judged by whether their worker is alive."""
    if hasattr(config, "workerinput") or SETTINGS not in config.stash:
        return
    if config.stash.get(SWEPT, False) and not again:
        return  # once before the first run (xdist reports each worker's collection)
    config.stash[SWEPT] = True
    from pytest_mlab.sandbox.registry import remove_leftovers

    try:
        remove_leftovers(config.stash[SETTINGS].sandbox)
    except MlabError as exc:
        raise pytest.UsageError(f"--sandbox={config.stash[SETTINGS].sandbox}: {exc}") from None


def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    """Task specs: any YAML with ``kind: Task``, and everything in ``specs/tasks/`` (so a broken
    ``kind:`` line there is an error, not a silently skipped file)."""
    if file_path.suffix not in SPEC_SUFFIXES:
        return None
    in_task_folder = file_path.parent.name == "tasks" and file_path.parent.parent.name == "specs"
    if in_task_folder or _TASK_KIND.search(_head(file_path)):
        _activated_by_collection(parent.config, parent.session)
        from pytest_mlab.plugin.items import TaskFile

        return TaskFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """pytest-xdist's ``load`` distribution (its default under -n): runs go out longest first,
    planned from the times the results folder recorded (plugin/schedule.py); a session without
    Task specs gets xdist's own scheduling. Any other ``--dist`` is left to xdist."""
    if config.getvalue("dist") != "load":
        return None
    from pytest_mlab.plugin.schedule import LongestFirstScheduling
    from pytest_mlab.results.store import RESULTS_FILE

    def results_file() -> Path | None:  # asked at scheduling time, once pytest-mlab may have activated
        settings = config.stash.get(SETTINGS, None)
        return settings.out_dir / RESULTS_FILE if settings is not None else None

    return LongestFirstScheduling(config, log, results_file=results_file)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist, on the controller, as each worker starts: the session's id goes with it (each
    worker writes it in the traces of its runs); the API keys the controller holds, over xdist's
    channel (in no environment, no command line); and, once pytest-mlab is active, the answers
    about the session's models, so no worker asks litellm again."""
    node.workerinput[WORKER_INPUT] = node.config.stash[SESSION]
    if node.config.stash.get(KEYS_HELD, False):
        from pytest_mlab.llm.secrets import held

        node.workerinput[WORKER_KEYS] = held()
    if node.config.stash.get(ACTIVE, False):
        from pytest_mlab.plugin.model_checks import hand_over

        hand_over(node.config, node.workerinput)


def _parallel(config: pytest.Config) -> bool:
    """True under pytest-xdist (on the controller: -n N with N > 0; on a worker: always)."""
    return hasattr(config, "workerinput") or bool(getattr(config.option, "numprocesses", None))


def _head(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(65536)
    except OSError:
        return ""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """pytest-mlab's own hooks (plugin/hookspecs.py), for conftest files and plugins to implement."""
    from pytest_mlab.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)

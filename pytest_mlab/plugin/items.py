"""The pytest nodes: a Task spec file, one item per (agent, seed) run plan of that task, and the
check of the project's Agent and Action files."""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pytest

from pytest_mlab.errors import MlabError, SpecError, SpecWarning
from pytest_mlab.plugin.state import MARKERS, SESSION, SETTINGS, TASKS_COLLECTED, UNMET_PROPERTY, project_of
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.spec.plan import RunPlan, Settings, compile_plans

if TYPE_CHECKING:  # the session imports this module to collect; the spec machinery waits for a spec
    from pytest_mlab.spec.project import Project


def ray_gpus(settings: Settings) -> Callable[[], int] | None:
    """--mlab-ray: the GPU check asks the cluster (the most GPUs on one node), not this machine."""
    if settings.ray is None:
        return None
    from pytest_mlab.cluster.ray_cluster import most_gpus_on_one_node

    return functools.partial(most_gpus_on_one_node, settings.ray)


def session_agents(settings: Settings, project: Project) -> list[str]:
    """The agents this session runs: those named with --agent, else the default ones."""
    return list(settings.agents) or project.default_agents()


def compile_file(settings: Settings, project: Project, path: Path) -> tuple[TaskSpec, list[RunPlan]]:
    """The task of a spec file and its run plans for this session's agents, seeds and data. An
    agent whose spec (or one of whose actions) is broken gets no plan: :class:`SpecCheck` reports
    that file once, rather than every task file."""
    task = project.task_from_file(path)
    names = session_agents(settings, project)
    if not names:
        raise SpecError(task.source, task.line, "", f"no agent to run: pass --agent=NAME, or mark an agent in "
                                                    f"{project.agents.folders[0]} with 'default: true'")
    agents = []
    for name in names:
        try:
            agent = project.agent(name, wanted_by=(settings.agents_source, None, ""))
            agents.append((agent, project.agent_actions(agent)))
        except SpecError:
            continue
    return task, compile_plans(task, agents, settings)


class SpecFile(pytest.File):
    """A spec file; its errors are printed as ``file:line: message``, without a traceback."""

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, MlabError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def missing_reference(plan: RunPlan) -> str | None:
    """Why the reference agent has nothing to run on the plan's task: it writes the task's reference
    solution, and there is none (an MLAgentBench folder has none of its own). Known at collection,
    so its item is skipped with the reason instead of crashing at run time; None for other agents."""
    from pytest_mlab.agents.base import agent_class
    from pytest_mlab.agents.reference import ReferenceAgent
    from pytest_mlab.spec.reading import display_path

    try:
        if not issubclass(agent_class(plan.agent), ReferenceAgent):
            return None
    except SpecError:  # a broken agent is reported against its own file
        return None
    task = plan.task
    if task.reference_solution():
        return None
    folder = task.assets / task.reference_files
    state = "holds no files" if folder.is_dir() else "does not exist"
    return (f"task '{task.name}' has no reference solution for agent '{plan.agent.name}': {display_path(folder)}/ "
            f"{state}; put the solution's files there (they are written over the starter files), or name its "
            f"folder with 'reference.files' or 'assets' in {task.source}")


class TaskFile(SpecFile):
    """One Task spec: yields an item per (agent, seed) for the session's data variant."""

    def collect(self):
        from pytest_mlab.data.requirements import unmet_requirement
        from pytest_mlab.llm.providers import unavailable as llm_unavailable
        from pytest_mlab.plugin.model_checks import model_check
        from pytest_mlab.spec.baselines import missing_baseline

        config = self.config
        config.stash[TASKS_COLLECTED] = True
        settings = config.stash[SETTINGS]
        task, plans = compile_file(settings, project_of(config), self.path)
        check = model_check(config)
        # every run is graded against the variant's baseline: none, and no run can pass or fail
        skip_reason = unmet_requirement(task, settings.variant, settings.cache_dir, preparing=settings.prepare,
                                        cluster_gpus=ray_gpus(settings)) or missing_baseline(task, settings.variant)
        _register_tags(config, task.tags)
        for tag in (*task.tags, "mlab"):  # on the file once: its items inherit them for -m and -k
            self.add_marker(tag)
        for plan in plans:
            item = MlabItem.from_parent(self, name=plan.run_id, plan=plan)
            reason = skip_reason or missing_reference(plan) or (
                llm_unavailable(plan.llms, task.name, plan.invocation_dir, check) if plan.llms else None)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
                item.user_properties.append((UNMET_PROPERTY, reason))
            yield item


class BrokenSpecFile(SpecFile):
    """An Agent or Action file that an agent of the session needs: its collection error, once."""

    def __init__(self, *, error: SpecError, **kwargs) -> None:
        super().__init__(**kwargs)
        self.error = error

    def collect(self):
        raise self.error


def _node_id(config: pytest.Config, path: Path) -> str:
    """A file's path from the rootdir, as pytest names files; absolute outside it (an agent a plugin added)."""
    path = Path(os.path.abspath(path))
    return path.relative_to(config.rootpath).as_posix() if path.is_relative_to(config.rootpath) else path.as_posix()


class SpecCheck(pytest.Collector):
    """Collected after everything else: when the session collected a Task spec, every Agent and
    Action file of the project is checked, used or not. A broken file that an agent of the session
    needs is a collection error of that file (the items of that agent are not collected); any other
    broken file is a warning, which stops nothing."""

    def collect(self):
        if not self.config.stash.get(TASKS_COLLECTED, False):
            return
        settings = self.config.stash[SETTINGS]
        project = project_of(self.config)
        for broken in project.broken_specs(session_agents(settings, project), defaults=not settings.agents):
            if broken.needed:
                yield BrokenSpecFile.from_parent(self, path=broken.path, nodeid=_node_id(self.config, broken.path),
                                                 error=broken.error)
            elif getattr(self.config, "workerinput", {}).get("workerid", "gw0") == "gw0":  # once under xdist
                warnings.warn_explicit(f"no agent of this session needs this file, so nothing stops; fix it before "
                                       f"you use it:\n{broken.error}", SpecWarning, broken.error.path,
                                       broken.error.line or 0)


def _register_tags(config: pytest.Config, tags: tuple[str, ...]) -> None:
    """Task tags are markers; registering them keeps ``--strict-markers`` users working."""
    if MARKERS not in config.stash:
        config.stash[MARKERS] = {line.split(":")[0].strip() for line in config.getini("markers")}
    known = config.stash[MARKERS]
    for tag in tags:
        if tag not in known:
            config.addinivalue_line("markers", f"{tag}: task tag from a pytest-mlab Task spec")
            known.add(tag)


class RunFailed(Exception):
    """The run did not meet its assertion; the message is the whole story, no traceback needed."""


class MlabItem(pytest.Item):
    def __init__(self, *, plan: RunPlan, **kwargs) -> None:
        super().__init__(**kwargs)
        self.plan = plan
        self.mlab_result: dict | None = None  # the result as attached, for pytest-html extras

    def runtest(self) -> None:
        """Run, attach, raise: the engine does the rest."""
        from pytest_mlab.plugin.junit import attach
        from pytest_mlab.plugin.options import GPU_POOL
        from pytest_mlab.runner import BudgetSpent, run_item

        try:
            result = run_item(self.plan, self.nodeid, self.config.stash[SETTINGS], session=self.config.stash[SESSION],
                              console=self._console(), gpu_pool=self.config.stash.get(GPU_POOL, None))
        except BudgetSpent as exc:
            pytest.skip(str(exc))
        attach(self, result)
        if not result.passed:
            where = f"\ntrace: {Path(result.trace).resolve()}" if result.trace else ""
            raise RunFailed(f"{result.message}{where}")

    def _console(self):
        from pytest_mlab.llm.providers import HUMAN

        if HUMAN not in self.plan.llms.values():
            return None
        from pytest_mlab.plugin.console import terminal_console

        return terminal_console(self.config)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (RunFailed, MlabError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, self.plan.task.line - 1, self.name


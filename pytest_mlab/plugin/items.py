"""The pytest nodes: a Task spec file, and one item per (agent, seed) run plan of that task."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.errors import MlabError, SpecError
from pytest_mlab.plugin.state import MARKERS, SESSION, SETTINGS, UNMET_PROPERTY, project_of
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.spec.plan import RunPlan, Settings, compile_plans
from pytest_mlab.spec.project import Project


def compile_file(settings: Settings, project: Project, path: Path) -> tuple[TaskSpec, list[RunPlan]]:
    """The task of a spec file and its run plans for this session's agents, seeds and data."""
    task = project.task_from_file(path)
    names = list(settings.agents) or project.default_agents()
    if not names:
        raise SpecError(task.source, task.line, "", f"no agent to run: pass --agent=NAME, or mark an agent in "
                                                    f"{project.agents.folders[0]} with 'default: true'")
    agents = []
    for name in names:
        agent = project.agent(name, wanted_by=(settings.agents_source, None, ""))
        agents.append((agent, project.agent_actions(agent)))
    return task, compile_plans(task, agents, settings)


class TaskFile(pytest.File):
    """One Task spec: yields an item per (agent, seed) for the session's data variant."""

    def collect(self):
        from pytest_mlab.data.requirements import unmet_requirement
        from pytest_mlab.llm.providers import unavailable as llm_unavailable

        config = self.config
        settings = config.stash[SETTINGS]
        task, plans = compile_file(settings, project_of(config), self.path)
        skip_reason = unmet_requirement(task, settings.variant, settings.cache_dir, preparing=settings.prepare)
        _register_tags(config, task.tags)
        for tag in (*task.tags, "mlab"):  # on the file once: its items inherit them for -m and -k
            self.add_marker(tag)
        for plan in plans:
            item = MlabItem.from_parent(self, name=plan.run_id, plan=plan)
            reason = skip_reason or (llm_unavailable(plan.llms, task.name, plan.invocation_dir) if plan.llms else None)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
                item.user_properties.append((UNMET_PROPERTY, reason))
            yield item

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, MlabError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)


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
        from pytest_mlab.runner import BudgetSpent, run_item

        try:
            result = run_item(self.plan, self.nodeid, self.config.stash[SETTINGS],
                              session=self.config.stash[SESSION], console=self._console())
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


"""The specs one pytest session works with: actions, agents and the tasks it collects."""

from __future__ import annotations

from pathlib import Path

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec.library import SpecLibrary, TaskFiles, build_action, build_agent, build_task, remembered


class Project:
    """Spec folders resolved against the project root (pytest's rootdir), loaded lazily and cached.

    Errors are cached too, so a broken agent file is reported on every item that uses it
    without being re-read, and never stops unrelated items.
    """

    def __init__(self, root: Path, actions_dir: Path, agents_dir: Path, tasks_dir: Path) -> None:
        self.root = root
        self.actions = SpecLibrary("Action", [actions_dir])
        self.agents = SpecLibrary("Agent", [agents_dir])
        self.tasks = SpecLibrary("Task", [tasks_dir])
        self.files = TaskFiles()
        self._built: dict[tuple[str, str], object] = {}

    def _cached(self, key: tuple[str, str], build):
        return remembered(self._built, key, build, SpecError)

    def action(self, name: str, wanted_by: tuple[str, int | None, str] | None = None) -> models.ActionSpec:
        return self._cached(("action", name), lambda: build_action(self.actions.raw(name, wanted_by=wanted_by), self.actions))

    def agent(self, name: str, wanted_by: tuple[str, int | None, str] | None = None) -> models.AgentSpec:
        return self._cached(("agent", name),
                            lambda: build_agent(self.agents.raw(name, wanted_by=wanted_by), self.agents, self.actions))

    def agent_actions(self, agent: models.AgentSpec) -> tuple[models.ActionSpec, ...]:
        """The actions of the agent's Environment: those its prompt offers, then those it also accepts."""
        return tuple(self.action(name, (agent.source, None, "actions")) for name in agent.environment_actions)

    def default_agents(self) -> list[str]:
        """Agents marked ``default: true``: what runs when --agent is not given.

        A broken agent file is an error here, not a silent omission: it may be a default agent.
        """
        problems = self.agents.unreadable()
        names = []
        for name in self.agents.names():
            try:
                if self.agent(name).default:
                    names.append(name)
            except SpecError as exc:
                problems.append(exc)
        if problems:
            raise SpecError(problems[0].path, problems[0].line, problems[0].where,
                            f"{problems[0].message} (this agent spec must be fixed before the default agents "
                            f"can be chosen; or name agents with --agent)", problems[0].others + problems[1:])
        return names

    def task_from_file(self, path: Path) -> models.TaskSpec:
        def build() -> models.TaskSpec:
            raw = self.tasks.read(path)
            self.tasks.add(raw)
            return build_task(raw, self.tasks, self.root, self.files)
        return self._cached(("task-file", str(path.resolve())), build)

"""The specs one pytest session works with: actions, agents and the tasks it collects."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec.builders import build_action, build_agent, build_task
from pytest_mlab.spec.library import SpecLibrary
from pytest_mlab.spec.memo import remembered
from pytest_mlab.spec.task_files import TaskFiles

_YAML_TRUE = ("true", "yes", "on")


@dataclass(frozen=True)
class BrokenSpec:
    """An Agent or Action file that cannot be used, with every problem found in it."""

    path: Path
    error: SpecError
    needed: bool  # an agent of the session needs it, so that agent's items cannot run


class Project:
    """Spec folders resolved against the project root (pytest's rootdir), loaded lazily and cached.

    Errors are cached too, so a broken spec is judged once per session, and never stops unrelated
    items.
    """

    def __init__(self, root: Path, actions_dir: Path, agents_dir: Path, tasks_dir: Path) -> None:
        self.root = root
        homes = {"Action": actions_dir, "Agent": agents_dir, "Task": tasks_dir}
        self.actions = SpecLibrary("Action", [actions_dir], homes)
        self.agents = SpecLibrary("Agent", [agents_dir], homes)
        self.tasks = SpecLibrary("Task", [tasks_dir], homes)
        self.files = TaskFiles()
        self._built: dict[tuple[str, str], object] = {}
        self._defaults: list[str] | None = None

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
        """Agents whose spec says ``default: true``: what runs when --agent is not given. A broken
        agent that says so is one of them: its items cannot run, and :meth:`broken_specs` says why."""
        if self._defaults is None:
            self._defaults = [name for name in self.agents.names()
                              if self._declared(self.agents, name, "default") is True]
        return list(self._defaults)

    def broken_specs(self, agents: Sequence[str], *, defaults: bool) -> list[BrokenSpec]:
        """Every Agent and Action file that cannot be used, whether or not an agent uses it.
        ``agents``: the session's agents (``defaults``: chosen as the default ones); a file they
        need is ``needed``. A file too broken to say its name counts by its ``name:`` (and
        ``default:``) line as written."""
        wanted = set(agents)
        actions = {action for name in agents for key in ("actions", "accepts")
                   for action in _strings(self._declared(self.agents, name, key))}

        def agent_needed(path: Path) -> bool:
            return _written(path, "name") in wanted or (defaults and _written(path, "default").lower() in _YAML_TRUE)

        return (_broken(self.agents, self.agent, wanted, agent_needed)
                + _broken(self.actions, self.action, actions, lambda path: _written(path, "name") in actions))

    def _declared(self, library: SpecLibrary, name: str, key: str) -> Any:
        """What the spec ``name`` says of ``key``, with what it inherits when its ``extends:`` resolves."""
        entries = library.entries(name)
        if not entries:
            return None
        try:
            data, _lines = library.merged(entries[0])
        except SpecError:
            data = entries[0].data
        return data.get(key)

    def task_from_file(self, path: Path) -> models.TaskSpec:
        def build() -> models.TaskSpec:
            raw = self.tasks.read(path)
            self.tasks.add(raw)
            return build_task(raw, self.tasks, self.root, self.files)
        return self._cached(("task-file", str(path.resolve())), build)


def _broken(library: SpecLibrary, build: Callable[[str], object], needed: Collection[str],
            unreadable_needed: Callable[[Path], bool]) -> list[BrokenSpec]:
    found = [BrokenSpec(path, error, unreadable_needed(path)) for path, error in library.unreadable_files().items()]
    for name in library.names():
        try:
            build(name)
        except SpecError as error:
            found.append(BrokenSpec(library.entries(name)[0].path, error, name in needed))
    return found


def _strings(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _written(path: Path, key: str) -> str:
    """The value of a top-level ``key:`` line of a file that YAML cannot read; '' when there is none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    match = re.search(rf"^{key}:[ \t]*['\"]?([^'\"#\n]*?)['\"]?[ \t]*(#.*)?$", text, re.MULTILINE)
    return match.group(1) if match else ""

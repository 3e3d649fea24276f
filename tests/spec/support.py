"""Helpers for the spec tests: a throw-away project to write task, agent and action specs into."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec.project import Project
from tests.helpers import ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT


class Layout:
    """A throw-away project: tasks/, agents/ and actions/ folders plus the toy task's assets."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.tasks = root / "specs" / "tasks"
        self.agents = root / "agents"
        self.actions = root / "specs" / "actions"
        self.tasks.mkdir(parents=True)
        shutil.copytree(AGENTS_DIR, self.agents)
        shutil.copytree(ACTIONS_DIR, self.actions)
        shutil.copytree(TOY_PROJECT / "task_assets", root / "task_assets")

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        return path

    def project(self) -> Project:
        return Project(self.root, self.actions, self.agents, self.tasks)

    def task(self, relative: str) -> models.TaskSpec:
        return self.project().task_from_file(self.root / relative)

    def task_error(self, relative: str) -> SpecError:
        with pytest.raises(SpecError) as excinfo:
            self.task(relative)
        return excinfo.value

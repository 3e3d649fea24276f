"""Build a real Environment over a real local sandbox, with the repository's Action specs."""

from __future__ import annotations

from pathlib import Path

from pytest_mlab.actions.registry import implementations
from pytest_mlab.env import Environment, ReadOnlyRules
from pytest_mlab.sandbox import LocalSandbox
from pytest_mlab.spec.models import Limits
from pytest_mlab.spec.project import Project
from pytest_mlab.trace import SnapshotStore, TraceWriter

REPO = Path(__file__).resolve().parents[2]
ALL_ACTIONS = ("List Files", "Read File", "Write File", "Append File", "Copy File", "Undo Edit Script",
               "Inspect Script Lines", "Execute Script", "Final Answer")


def repo_project() -> Project:
    return Project(REPO, REPO / "specs/actions", REPO / "agents", REPO / "specs/tasks")


def make_environment(tmp_path: Path, *, files: dict[str, str] | None = None, read_only: ReadOnlyRules | None = None,
                     limits: Limits | None = None, actions: tuple[str, ...] = ALL_ACTIONS) -> Environment:
    project = repo_project()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, content in (files or {}).items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(content)
    sandbox = LocalSandbox(workspace)
    specs = tuple(project.action(name) for name in actions)
    return Environment(sandbox=sandbox, actions=specs, implementations=implementations(specs),
                       limits=limits or Limits(max_steps=100, execute_timeout=20),
                       read_only=read_only or ReadOnlyRules(), trace=TraceWriter(tmp_path / "trace.jsonl"),
                       snapshots=SnapshotStore(tmp_path / "snapshots"), research_problem="test problem")

"""Helpers for the Kaggle tasks' tests: load a task's prepare/grader modules, make mini data, and
grade a submission written into a temporary workspace."""

from __future__ import annotations

import hashlib
import importlib.util
import pathlib
from types import ModuleType

import pandas as pd

ASSETS = pathlib.Path(__file__).resolve().parents[2] / "task_assets"


def module(task: str, name: str) -> ModuleType:
    path = ASSETS / task / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_test_{task.replace('-', '_')}_{name}", path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def make_mini(task: str, root: pathlib.Path, seed: int = 0) -> tuple[pathlib.Path, pathlib.Path]:
    public, hidden = root / "public", root / "hidden"
    public.mkdir(parents=True)
    hidden.mkdir(parents=True)
    module(task, "prepare").mini(public, hidden, seed)
    return public, hidden


def digests(folder: pathlib.Path) -> dict[str, str]:
    return {path.relative_to(folder).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def grade(task: str, submission: pd.DataFrame | str, hidden: pathlib.Path, workspace: pathlib.Path,
          name: str = "submission.csv") -> float:
    """Write ``submission`` (a frame, or raw CSV text) into ``workspace`` and grade it."""
    workspace.mkdir(exist_ok=True)
    if isinstance(submission, str):
        (workspace / name).write_text(submission)
    else:
        submission.to_csv(workspace / name, index=False)
    return module(task, "grader").score(workspace, hidden)

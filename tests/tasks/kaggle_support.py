"""Helpers for the Kaggle tasks' tests: load a task's prepare/grader modules, make mini data,
grade a submission written into a temporary workspace, and run a skeleton starter with its block
to fill in left empty or filled in."""

from __future__ import annotations

import hashlib
import importlib.util
import pathlib
import shutil
import subprocess
import sys
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


def run_starter(task: str, public: pathlib.Path, workspace: pathlib.Path,
                block: str = "") -> subprocess.CompletedProcess:
    """Run the task's env/train.py in a fresh workspace, with ``block`` written into the block it
    leaves to fill in (just above the banner that closes it)."""
    shutil.copytree(ASSETS / task / "env", workspace)
    shutil.copytree(public, workspace, dirs_exist_ok=True)
    lines = (workspace / "train.py").read_text().splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if "End of the block to fill in" in line) - 1
    (workspace / "train.py").write_text("".join(lines[:end]) + block + "".join(lines[end:]))
    return subprocess.run([sys.executable, "train.py"], cwd=workspace, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def assert_stops_at_the_missing(task: str, public: pathlib.Path, workspace: pathlib.Path, variable: str) -> None:
    """The unchanged skeleton fails where it first needs what the block to fill in must define."""
    completed = run_starter(task, public, workspace)
    assert completed.returncode != 0 and f"NameError: name '{variable}' is not defined" in completed.stderr
    assert not (workspace / "submission.csv").exists()


def filled_in_score(task: str, data: tuple[pathlib.Path, pathlib.Path], workspace: pathlib.Path, block: str,
                    printed: tuple[str, ...]) -> float:
    """Run the skeleton with ``block`` filled in; it must print ``printed`` and write a valid submission."""
    completed = run_starter(task, data[0], workspace, block)
    assert completed.returncode == 0, completed.stderr
    assert all(text in completed.stdout for text in printed), completed.stdout
    return module(task, "grader").score(workspace, data[1])

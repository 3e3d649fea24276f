"""Shared helpers for the test suite: repository paths, the toy project and pytester sub-runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"
TOY_PROJECT = TESTS / "fixtures" / "toy_project"
ACTIONS_DIR = REPO / "specs" / "actions"
AGENTS_DIR = REPO / "agents"

# A Python traceback, or a line of pytest-mlab's own source, in output meant for a spec author.
_PACKAGE_SOURCE_LINE = re.compile(r"pytest_mlab[/\\][\w/\\]+\.py")


def copy_toy_project(dest: Path) -> Path:
    """The toy project plus the repository's Action and Agent specs, laid out as a user's project."""
    for entry in TOY_PROJECT.iterdir():
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, dirs_exist_ok=True)
        else:
            shutil.copy2(entry, dest / entry.name)
    shutil.copytree(ACTIONS_DIR, dest / "specs" / "actions", dirs_exist_ok=True)
    shutil.copytree(AGENTS_DIR, dest / "agents", dirs_exist_ok=True)
    (dest / "pytest.ini").write_text("")
    return dest


# Plugins of this environment that pytest-mlab has nothing to do with; importing them costs about a
# second per sub-run (hypothesis) and adds noise to the output. Blocking an absent plugin is harmless.
UNRELATED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:benchmark")


def run_specs(pytester: pytest.Pytester, *args: str, cache_dir: Path, subprocess: bool = False,
              targets: tuple[str, ...] = ("specs",)) -> pytest.RunResult:
    """``pytest specs --mlab-cache CACHE -p no:cacheprovider ARGS`` in the pytester directory."""
    full = (*targets, "--mlab-cache", str(cache_dir), "-p", "no:cacheprovider", *UNRELATED_PLUGINS, *args)
    if subprocess:
        return pytester.runpytest_subprocess(*full)
    return pytester.runpytest(*full)


def output_of(result: pytest.RunResult) -> str:
    """stdout and stderr of a sub-run as one string."""
    return "\n".join(result.outlines + result.errlines)


def assert_no_traceback(text: str) -> None:
    """Spec and usage errors are for spec authors: no Python traceback, no package source lines."""
    assert "Traceback" not in text, text
    assert not _PACKAGE_SOURCE_LINE.search(text), text


def collected_ids(result: pytest.RunResult) -> list[str]:
    """Node ids printed by ``--collect-only -q``."""
    return [line.strip() for line in result.outlines if "::" in line and not line.startswith(" ")]


def read_results(project: Path, out: str = "mlab-results") -> dict[str, Any]:
    return json.loads((project / out / "results.json").read_text())


def task_yaml(name: str = "demo", *, assets: str = "task_assets/toy", extra: str = "") -> str:
    """A valid Task spec for the toy assets; ``extra`` is appended verbatim (top-level keys)."""
    text = f"""\
        kind: Task
        name: {name}
        description: Predict the sum of the numbers in data.csv.
        assets: {assets}
        data:
          mini: {{prepare: "prepare.py:mini"}}
        metric:
          name: error
          direction: minimize
          grader: "grader.py:score"
        """
    return textwrap.dedent(text) + textwrap.dedent(extra)


def toy_run(tmp_path: Path, grader: str | None = None, *, sandbox: str = "local",  # type: ignore[no-untyped-def]
            reference: str | None = None):
    """The reference agent's run of the toy task (graded by ``grader``, running ``reference`` as
    its train.py, if given), under ``sandbox``."""
    from pytest_mlab.runner import execute
    from pytest_mlab.spec.plan import Settings, compile_plans
    from pytest_mlab.spec.project import Project

    root = copy_toy_project(tmp_path / "project")
    if grader is not None:
        (root / "task_assets" / "toy" / "grader.py").write_text(grader)
    if reference is not None:
        (root / "task_assets" / "toy" / "reference" / "train.py").write_text(reference)
    project = Project(root, root / "specs" / "actions", root / "agents", root / "specs" / "tasks")
    reference = project.agent("reference")
    settings = Settings(agents=(), agents_source="--agent", llm=None, seeds=1, variant="mini", sandbox=sandbox,
                        out_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    (plan,) = compile_plans(project.task_from_file(root / "specs" / "tasks" / "toy.yaml"),
                            [(reference, project.agent_actions(reference))], settings)
    return execute(plan, "toy.yaml::toy[mini-reference-s0]")


def folder_chain(top: Path, depth: int) -> None:
    """``top/d/d/.../d`` ``depth`` folders deep, with a file every 1,000 levels, made relative to
    the deepest folder's fd (its path is far longer than PATH_MAX)."""
    top.mkdir(parents=True, exist_ok=True)
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
            if level % 1000 == 0:
                os.close(os.open("file", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    finally:
        os.close(fd)

"""The task-author API: task code (graders, data recipes, measure steps) imports pytest_mlab only
through :mod:`pytest_mlab.task_api`, which holds its own names and nothing of the engine."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from pytest_mlab import task_api
from tests.helpers import REPO, TOY_PROJECT
from tests.imports import PACKAGE, imported_modules

API = task_api.__name__
TASK_CODE = sorted([*(REPO / "task_assets").rglob("*.py"), *(TOY_PROJECT / "task_assets").rglob("*.py")])


def outside_the_api(path: Path) -> list[str]:
    """Each import of pytest_mlab in a task's file that is not the task API, as ``file:line: module``.
    A measure step (a file that imports ``mlab_measure``) runs in the sandbox: it may import none."""
    imports = imported_modules(path, PACKAGE)
    in_sandbox = any(module == "mlab_measure" for _line, module in imports)
    return [f"{path.name}:{line}: {module}" for line, module in imports
            if module.split(".")[0] == PACKAGE.name and (module != API or in_sandbox)]


def test_task_code_imports_pytest_mlab_only_through_the_task_api():
    assert len(TASK_CODE) > 30
    assert {str(path.relative_to(REPO)): problems for path in TASK_CODE if (problems := outside_the_api(path))} == {}


def test_the_check_sees_an_import_from_anywhere_else(tmp_path):
    grader = tmp_path / "grader.py"
    grader.write_text("import importlib\nfrom pytest_mlab.task_api import InvalidSubmission, read_submission\n"
                      "from pytest_mlab.grading import measured\nfrom pytest_mlab import errors\n"
                      "from pytest_mlab.task_api import _tool_tasks\nimportlib.import_module('pytest_mlab.data')\n")
    measure = tmp_path / "measure.py"
    measure.write_text("import mlab_measure\nfrom pytest_mlab.task_api import executions\n")
    assert outside_the_api(grader) == ["grader.py:3: pytest_mlab.grading.measured", "grader.py:4: pytest_mlab.errors",
                                       "grader.py:5: pytest_mlab.task_api._tool_tasks", "grader.py:6: pytest_mlab.data"]
    assert outside_the_api(measure) == ["measure.py:2: pytest_mlab.task_api"]


def test_the_api_holds_its_own_names_and_no_module():
    # (pytest's assertion rewriting, which covers this package as a plugin's, adds names no code can spell)
    public = {name for name in vars(task_api) if name.isidentifier() and not name.startswith("_")}
    assert public == set(task_api.__all__)
    assert [name for name in public if inspect.ismodule(getattr(task_api, name))] == []


def test_invalid_submission_has_one_home_and_only_the_api_passes_it_on():
    defined, passed_on = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name == "InvalidSubmission":
                defined.append(path.relative_to(PACKAGE).as_posix())
            if (isinstance(node, ast.Assign) and any(getattr(target, "id", "") == "__all__" for target in node.targets)
                    and "InvalidSubmission" in [getattr(name, "value", None) for name in getattr(node.value, "elts", [])]):
                passed_on.append(path.relative_to(PACKAGE).as_posix())
    assert (defined, passed_on) == (["errors.py"], ["task_api/__init__.py"])

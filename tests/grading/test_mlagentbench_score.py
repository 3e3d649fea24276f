"""The grader of MLAgentBench folders: the folder's get_score, called in the grader's own process from
the hidden scripts/, never with the agent's code on its path. A workspace get_score fails on is an
invalid submission; an eval.py that cannot be imported is the grader's failure."""

from __future__ import annotations

import shutil
from pathlib import Path

from pytest_mlab.data.mlagentbench import prepare
from pytest_mlab.sandbox.environ import clean_environment
from pytest_mlab.spec.mlagentbench import SCORE, scripts_digest
from pytest_mlab.spec.models import FunctionRef
from pytest_mlab.task_code import TaskCallResult, call_task_function
from tests.mlagentbench_folder import BASELINE_MAE, write_folder


def graded(tmp_path: Path, workspace_files: dict[str, str], **replace: str) -> TaskCallResult:
    """The folder prepared, a workspace holding its data and ``workspace_files``, graded as runs are."""
    folder = write_folder(tmp_path / "tab", **replace)
    public, hidden, workspace = tmp_path / "public", tmp_path / "hidden", tmp_path / "workspace"
    for made in (public, hidden, workspace):
        made.mkdir()
    prepare(public, hidden, 0, folder=str(folder), scripts_digest=scripts_digest(folder))
    shutil.copytree(public, workspace, dirs_exist_ok=True)
    for name, content in workspace_files.items():
        (workspace / name).write_text(content)
    return call_task_function(tmp_path, FunctionRef.parse(SCORE), {"workspace": workspace, "answers": hidden},
                              timeout=60, env=clean_environment())


def test_get_score_scores_the_workspace_with_the_hidden_answers(tmp_path: Path) -> None:
    rows = ["id,y"] + [f"{index},{10.0}" for index in range(300, 400)]
    result = graded(tmp_path, {"submission.csv": "\n".join(rows) + "\n"})
    assert result.error is None and result.invalid is None
    assert abs(result.value - BASELINE_MAE) < 1.5  # a constant near the mean scores about as the starter does


def test_a_workspace_get_score_fails_on_is_an_invalid_submission(tmp_path: Path) -> None:
    result = graded(tmp_path, {})
    assert result.invalid.startswith("get_score of the task's eval.py failed on this workspace: FileNotFoundError:")
    assert "submission.csv" in result.invalid


def test_an_eval_py_that_cannot_be_imported_is_the_graders_failure(tmp_path: Path) -> None:
    result = graded(tmp_path, {"submission.csv": "id,y\n"}, **{"scripts/eval.py": "import not_a_module_here\n"
                                                                                   "def get_score(folder):\n"
                                                                                   "    return 1.0\n"})
    assert result.invalid is None and "ModuleNotFoundError: No module named 'not_a_module_here'" in result.error


def test_eval_py_imports_the_unchanged_starter_never_the_agents_code(tmp_path: Path) -> None:
    result = graded(tmp_path, {"helper.py": "VALUE = 99.0\n"}, **{
        "env/helper.py": "VALUE = 1.0\n",
        "scripts/eval.py": "import sys\nsys.path.append('../env')\nfrom helper import VALUE\n\n"
                           "def get_score(submission_folder='../env'):\n    return VALUE\n"})
    assert result.value == 1.0

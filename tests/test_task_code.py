"""Task functions run in a process of their own and report values, rejections and failures clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.spec.models import FunctionRef
from pytest_mlab.task_code import call_task_function

CODE = '''
import os, time
from pathlib import Path
import numpy as np
from pytest_mlab.task_api import InvalidSubmission

def numpy_scalar(workspace: Path) -> float:
    print("noise on stdout")
    return np.float32(0.5)

def reject(workspace: Path) -> float:
    raise InvalidSubmission("submission.csv: missing column 'target'")

def fail(workspace: Path) -> float:
    return 1 / 0

def arguments(workspace: Path, seed: int) -> list:
    return [type(workspace).__name__, seed, os.environ.get("SECRET_TOKEN")]

def slow(workspace: Path) -> float:
    time.sleep(30)

def die(workspace: Path) -> float:
    os._exit(3)
'''


@pytest.fixture
def assets(tmp_path: Path) -> Path:
    (tmp_path / "grader.py").write_text(CODE)
    return tmp_path


def call(assets: Path, function: str, **arguments):
    return call_task_function(assets, FunctionRef("grader.py", function), {"workspace": assets, **arguments},
                              timeout=10, env={"PATH": "/usr/bin:/bin"})


def test_numpy_scalars_come_back_as_numbers_and_prints_do_not_interfere(assets):
    result = call(assets, "numpy_scalar")
    assert result.value == 0.5 and result.error is None and "noise on stdout" in result.output


def test_invalid_submission_is_a_rejection_with_the_graders_words(assets):
    result = call(assets, "reject")
    assert result.invalid == "submission.csv: missing column 'target'" and result.value is None


def test_an_exception_is_an_error_with_its_traceback_tail(assets):
    result = call(assets, "fail")
    assert "ZeroDivisionError: division by zero" in result.error


def test_paths_arrive_as_paths_values_as_values_and_only_the_given_environment(assets, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "leak")
    assert call(assets, "arguments", seed=3).value == ["PosixPath", 3, None]


def test_a_stuck_function_is_timed_out(assets):
    result = call_task_function(assets, FunctionRef("grader.py", "slow"), {"workspace": assets}, timeout=1)
    assert result.error == "grader.py:slow did not finish within 1s"


def test_a_process_that_dies_is_reported(assets):
    assert "exited with code 3 before returning" in call(assets, "die").error

"""A session that finds no task runtime builds it before its first run, with uv's progress on the
terminal; --collect-only builds nothing. uv is the fake of conftest.py, mirroring the suite's real
runtime so that the run's scripts have their packages."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_mlab.task_runtime import build, choice
from tests.helpers import copy_toy_project, output_of, run_specs


@pytest.fixture
def fresh_home(request, monkeypatch) -> Path:
    real = Path(choice.task_python()).parent.parent  # the suite's locked runtime, before the home changes
    request.getfixturevalue("fake_uv")
    monkeypatch.setenv("FAKE_UV_MIRROR", str(real))
    monkeypatch.setenv(choice.VARIABLE, choice.LOCKED)
    choice.task_python.cache_clear()
    yield Path(os.environ[build.HOME_VARIABLE])
    choice.task_python.cache_clear()


def test_the_first_session_builds_the_runtime_before_its_first_run_and_shows_progress(pytester, fresh_home):
    project = copy_toy_project(pytester.path)
    result = run_specs(pytester, "--agent=baseline", "--sandbox=local", "-p", "no:randomly",
                       cache_dir=project / ".cache")
    text = output_of(result)
    result.assert_outcomes(passed=1)
    building = text.index("task runtime: building the task runtime")
    assert text.index("task runtime: Prepared 3 packages in 1.2s") > building
    assert text.index("task runtime: the task runtime is ready") < text.index("specs/tasks/toy.yaml")
    assert build.is_built(build.runtime_folder(fresh_home))


def test_collect_only_builds_nothing(pytester, fresh_home):
    project = copy_toy_project(pytester.path)
    result = run_specs(pytester, "--agent=baseline", "--collect-only", "-q", cache_dir=project / ".cache")
    assert result.ret == 0
    assert "task runtime" not in output_of(result)
    assert not build.runtime_folder(fresh_home).exists()

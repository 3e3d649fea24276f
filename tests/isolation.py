"""The project's own test session shares no folder with a user's runs.

pytest-mlab's plugin is active in the test session itself (it is installed), so without this the
session would keep its results and its data cache where a user's ``pytest specs/`` keeps them:
``mlab-results/`` in the checkout and ``~/.cache/pytest-mlab``. Here every process of the test session (the controller and each xdist worker) points
those defaults at one scratch folder of its own, made when the session starts and removed when it
ends; the machine's lock folder (``PYTEST_MLAB_LOCKS``) too. An explicit ``--mlab-out`` or ``--mlab-cache`` is kept as given.

The task runtime (the agents' Python environment, 4 GB) is built once per machine for the tests,
not per session: in a folder of the tests' own beside the user's (``MLAB_RUNTIME_HOME``), by the
controller before the first test, with uv's progress on the terminal.

Sub-runs (pytester) already pass their own folders.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from pytest_mlab.cache_home import default_cache_dir
from pytest_mlab.sandbox.host_locks import LOCKS_VARIABLE
from pytest_mlab.task_runtime import choice
from pytest_mlab.task_runtime.build import HOME_VARIABLE, ensure_built, is_built, runtime_folder

SCRATCH_VARIABLE = "PYTEST_MLAB_TESTS_SCRATCH"
#: The tests' own task runtimes: never the folder a user's runs build theirs in. CI, where no user
#: runs anything, names one folder for both (.ci/run), so the runtime is built once there.
TESTS_RUNTIME_VARIABLE = "PYTEST_MLAB_TESTS_RUNTIME_HOME"
TESTS_RUNTIME_HOME = Path(os.environ.get(TESTS_RUNTIME_VARIABLE)
                          or default_cache_dir().parent / "pytest-mlab-tests" / "task-runtime")


_made_here: list[Path] = []  # the scratch folder this process made, and so removes at its end


def session_scratch() -> Path:
    """The test session's scratch folder: made by the controller, inherited by its xdist workers
    (and by sub-runs) through the environment, removed by the process that made it."""
    if SCRATCH_VARIABLE not in os.environ:
        _made_here.append(Path(tempfile.mkdtemp(prefix="pytest-mlab-tests-")))
        os.environ[SCRATCH_VARIABLE] = str(_made_here[-1])
        # the machine's lock folder (GPUs, docker hosts): the session's own, never the user's
        os.environ[LOCKS_VARIABLE] = str(_made_here[-1] / "locks")
        os.environ[HOME_VARIABLE] = str(TESTS_RUNTIME_HOME)
        os.environ[choice.VARIABLE] = choice.LOCKED
    return Path(os.environ[SCRATCH_VARIABLE])


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    scratch = session_scratch()
    option = config.option
    if getattr(option, "mlab_out", None) in (None, "mlab-results"):
        option.mlab_out = str(scratch / "results")
    if getattr(option, "mlab_cache", None) is None:
        option.mlab_cache = str(scratch / "cache")


def pytest_sessionstart(session: pytest.Session) -> None:
    """The controller builds the tests' task runtime before any test needs it (workers that need it
    meanwhile wait for it on its lock)."""
    config = session.config
    if hasattr(config, "workerinput") or config.option.collectonly or is_built(runtime_folder()):
        return
    reporter = config.pluginmanager.getplugin("terminalreporter")
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        ensure_built(progress=lambda line: (reporter.write_line(f"task runtime for the tests: {line}"),
                                            reporter.flush()))


def pytest_unconfigure(config: pytest.Config) -> None:
    if _made_here and os.environ.get(SCRATCH_VARIABLE) == str(_made_here[-1]):
        shutil.rmtree(_made_here.pop(), ignore_errors=True)
        del os.environ[SCRATCH_VARIABLE]
        os.environ.pop(LOCKS_VARIABLE, None)

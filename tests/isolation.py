"""The project's own test session shares no folder and no lock with a user's runs.

pytest-mlab's plugin is active in the test session itself (it is installed), so without this the
session would keep its results, its data cache and the lock of timed measurements where a user's
``pytest specs/`` keeps them: ``mlab-results/`` in the checkout and ``~/.cache/pytest-mlab``. A test
that runs a script in-process would then wait while the user's main job times a submission, and
the reverse. Here every process of the test session (the controller and each xdist worker) points
those defaults at one scratch folder of its own, made when the session starts and removed when it
ends. An explicit ``--mlab-out`` or ``--mlab-cache`` is kept as given.

Sub-runs (pytester) already pass their own folders; ``PYTEST_MLAB_QUIET_DIR`` from the user's shell
is dropped, since it would otherwise put the suite's timed measurements under the user's lock.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

SCRATCH_VARIABLE = "PYTEST_MLAB_TESTS_SCRATCH"
QUIET_VARIABLE = "PYTEST_MLAB_QUIET_DIR"


def session_scratch() -> Path:
    """The test session's scratch folder: made by the controller, inherited by its xdist workers
    through the environment (they are started after the controller's plugins load)."""
    if SCRATCH_VARIABLE not in os.environ:
        os.environ[SCRATCH_VARIABLE] = tempfile.mkdtemp(prefix="pytest-mlab-tests-")
    return Path(os.environ[SCRATCH_VARIABLE])


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    os.environ.pop(QUIET_VARIABLE, None)
    scratch = session_scratch()
    if not hasattr(config, "workerinput"):
        config.stash[_OWNER] = True
    option = config.option
    if getattr(option, "mlab_out", None) in (None, "mlab-results"):
        option.mlab_out = str(scratch / "results")
    if getattr(option, "mlab_cache", None) is None:
        option.mlab_cache = str(scratch / "cache")


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.stash.get(_OWNER, False):
        shutil.rmtree(os.environ.pop(SCRATCH_VARIABLE), ignore_errors=True)


_OWNER = pytest.StashKey[bool]()

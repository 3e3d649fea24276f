"""Which Python this process's sandboxes run agents' code with. Chosen by $MLAB_TASK_RUNTIME,
which ``--mlab-runtime`` sets for the session and its workers: ``locked`` (the default: built
from the lock, see :mod:`.build`), ``host`` (pytest's own interpreter and packages, the
harness's included), or the path of a Python interpreter of the user's own (a virtual
environment with a CUDA build of torch, say). What of its installation a sandbox mounts is
:func:`pytest_mlab.sandbox.host_runtime.python_dirs`'s answer."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from pytest_mlab.errors import TaskRuntimeError

VARIABLE = "MLAB_TASK_RUNTIME"
LOCKED, HOST = "locked", "host"


def selected() -> str:
    return os.environ.get(VARIABLE, "").strip() or LOCKED


def describe(choice: str | None = None) -> str:
    """The choice in words, for the session header and results.json."""
    choice = choice or selected()
    if choice == LOCKED:
        from pytest_mlab.task_runtime.build import lock_digest

        return f"locked (requirements.lock {lock_digest()})"
    if choice == HOST:
        return f"host ({sys.executable}, with the harness's packages)"
    return f"your own ({choice})"


def check_choice(choice: str) -> str:
    """``choice`` if usable, else a TaskRuntimeError that says what the option takes."""
    if choice in (LOCKED, HOST):
        return choice
    path = Path(choice).expanduser()
    if not path.is_file() or not os.access(path, os.X_OK):
        raise TaskRuntimeError(f"--mlab-runtime / ${VARIABLE} is {choice!r}, which is neither 'locked', 'host' "
                               "nor an executable Python interpreter; give the path of one (e.g. "
                               "/opt/venvs/agents/bin/python)")
    return str(path.absolute())  # not resolved: a virtual environment's python is a link out of it


@functools.lru_cache(maxsize=None)
def task_python() -> str:
    """The interpreter agents' scripts run with; the locked runtime is built on first use."""
    choice = check_choice(selected())
    if choice == HOST:
        return sys.executable
    if choice == LOCKED:
        from pytest_mlab.task_runtime.build import ensure_built

        return str(ensure_built())
    return choice

"""Each task's mini data, prepared once per test session and shared by every test that only reads
it: the modules of tests/tasks, the grading attacks and the smoke tasks' runs, on both xdist
workers. Preparing llama-inference's mini data alone takes about a minute (the model's greedy
answers to 100 batches); it was prepared four times a session.

The data lives in the session's scratch folder (tests/isolation.py); a lock file per task makes
the worker that comes second wait for the first one's data instead of preparing its own. Tests
that change prepared files, or check that preparing is deterministic, prepare their own copy with
``tests.tasks.support.prepare``.
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path

from tests.isolation import session_scratch


def shared_mini(task: str) -> tuple[Path, Path]:
    """(public, hidden) of the task's mini data with the harness's seed; read them, never write."""
    from tests.tasks.support import prepare

    folder = session_scratch() / "mini-data"
    folder.mkdir(parents=True, exist_ok=True)
    root, done = folder / task, folder / f"{task}.prepared"
    with open(folder / f"{task}.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # a worker that died while preparing it
            prepare(task, root)
            done.touch()
    return root / "public", root / "hidden"

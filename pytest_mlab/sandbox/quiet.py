"""Timed measurements get the machine to themselves, as far as pytest-mlab's own work goes.

A timed task (vectorization, llama-inference) compares CPU seconds counted from outside. On a
small machine, another xdist worker training a model at the same moment inflates those counts
unevenly (shared caches, memory bandwidth, a virtual machine's stolen time): on 2 cores, the
unchanged llama-inference starter timed against itself scored 0.82 beside a CLRS training run.
So every script execution of an agent or a measure step holds a *shared* lock while it runs, and
a timed measurement holds the *exclusive* lock for all its interleaved executions: it waits for
running scripts to end, and scripts that start meanwhile wait for it.

The lock lives in the session's results folder, one per host (``.quiet/HOST/``), so the xdist
workers of a session agree on it; sessions with their own results folders do not wait for each
other, and work outside pytest-mlab is not held back: time on an otherwise quiet machine.
Outside a session (``pytest-mlab baseline``, library use) it is one folder per user in the
temporary directory; ``PYTEST_MLAB_QUIET_DIR`` overrides both. The kernel releases a ``flock``
when its holder dies, so a killed worker never leaves the lock held.

Writer priority: a shared holder passes through ``turnstile.lock`` before taking
``machine.lock``; a timed measurement keeps the turnstile while it waits, so new scripts line
up behind it instead of starving it.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

from pytest_mlab.errors import UsageError
from pytest_mlab.sandbox.host_locks import host_lock_folder

FOLDER_VARIABLE = "PYTEST_MLAB_QUIET_DIR"
_held = threading.local()  # this thread's exclusive depth: its own executions must not wait on it
_session_folder: Path | None = None


def use_results_folder(out_dir: Path) -> Path | None:
    """Called by the plugin in every process of a session (controller and workers alike). Returns
    the folder it replaces, which the session puts back when it ends (``restore_folder``): a session
    run inside another process's (pytester's in-process runs) must not leave its folder behind."""
    global _session_folder
    previous, _session_folder = _session_folder, host_lock_folder(out_dir, ".quiet")
    return previous


def restore_folder(folder: Path | None) -> None:
    global _session_folder
    _session_folder = folder


def lock_folder() -> Path:
    """The folder of the lock files, created if need be; a session checks it at its start."""
    configured = os.environ.get(FOLDER_VARIABLE)
    if configured:
        folder = Path(configured)
    else:
        folder = _session_folder or Path(tempfile.gettempdir()) / f"pytest-mlab-quiet-{os.getuid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable by you")
    except OSError as error:
        where = f"{FOLDER_VARIABLE}={configured}" if configured else str(folder)
        reason = error.strerror or str(error)
        raise UsageError(f"{where}: cannot keep the lock of timed measurements there ({reason}); set "
                         f"{FOLDER_VARIABLE} to a folder you can write, or leave it unset") from None
    return folder


def _open(name: str) -> IO[bytes]:
    return open(lock_folder() / name, "ab")


@contextmanager
def _locked(handle: IO[bytes], operation: int) -> Iterator[None]:
    fcntl.flock(handle, operation)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)


def holds_exclusive() -> bool:
    return getattr(_held, "depth", 0) > 0


@contextmanager
def script_running() -> Iterator[None]:
    """Held while one script runs: waits only while a timed measurement holds the machine."""
    if holds_exclusive():
        yield
        return
    with _open("turnstile.lock") as turnstile, _open("machine.lock") as machine:
        with _locked(turnstile, fcntl.LOCK_EX):
            fcntl.flock(machine, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(machine, fcntl.LOCK_UN)


@contextmanager
def timed_measurement() -> Iterator[None]:
    """Held for all the interleaved executions of one timed measurement."""
    if holds_exclusive():
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    with _open("turnstile.lock") as turnstile, _open("machine.lock") as machine:
        with _locked(turnstile, fcntl.LOCK_EX), _locked(machine, fcntl.LOCK_EX):
            _held.depth = 1
            try:
                yield
            finally:
                _held.depth = 0

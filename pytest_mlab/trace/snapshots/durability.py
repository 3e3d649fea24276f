"""How a snapshot reaches disk: one sync of the store's whole file system per snapshot, run in
the background so that the step that took the snapshot does not wait for the disk.

At most one sync is outstanding per store. Whatever must not run ahead of it (the store's next
snapshot, its settle, the run's result record) calls :meth:`BackgroundSync.wait` first, which
raises the sync's error, if it had one. What that means for durability is said in store.py.
"""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

from pytest_mlab.errors import TraceError


class BackgroundSync:
    """The one outstanding sync of a store's file system, and its error."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self) -> None:
        """Sync the file system in a thread, after the sync already under way (one at a time)."""
        self.wait()
        self._thread = threading.Thread(target=self._run, name=f"mlab-sync {self.root}", daemon=True)
        self._thread.start()

    def wait(self) -> None:
        """Return once no sync is under way; a TraceError if the last one failed."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        error, self._error = self._error, None
        if error is not None:
            raise TraceError(f"cannot make the snapshots in {self.root} durable: {error}; "
                             "the last step's snapshot may not survive a power cut") from error

    def _run(self) -> None:
        try:
            sync_filesystem(self.root)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            self._error = exc


_libc_syncfs: Any = None


def sync_filesystem(path: Path) -> None:
    """Make everything written on ``path``'s file system durable: ``syncfs``, else ``sync``."""
    global _libc_syncfs
    if _libc_syncfs is None:
        try:
            _libc_syncfs = ctypes.CDLL(None, use_errno=True).syncfs
        except (AttributeError, OSError):
            _libc_syncfs = False
    if _libc_syncfs:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            if _libc_syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    os.sync()

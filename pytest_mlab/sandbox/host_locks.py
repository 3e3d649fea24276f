"""Where the processes of one machine agree on its resources through lock files.

A machine's GPUs, and the sending of an image or a data volume to a docker host, are shared by
every session on the machine, whatever its results folder or checkout. So the locks live in one
folder per machine, not in a results folder: two sessions writing to different results folders
must still not hand one GPU to two runs. The folder is ``$PYTEST_MLAB_LOCKS`` when set (the
project's own test session sets it, so it never shares a lock with a user's runs), else
``/run/lock/pytest-mlab`` (a tmpfs, emptied at boot), else ``pytest-mlab-locks`` in the
temporary folder. Its folders are writable by every user, as ``/run/lock`` is, so sessions of
different users agree too.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import IO

from pytest_mlab.errors import SandboxError

LOCKS_VARIABLE = "PYTEST_MLAB_LOCKS"
SHARED_FOLDER = 0o1777  # anyone may add a lock, only its owner may remove it (like /run/lock)
SHARED_FILE = 0o666


def machine_lock_folder(*parts: str) -> Path:
    """The folder of this machine's locks of one kind (``parts``: its path below the root); made,
    writable by all, by :func:`make_shared` when first used, so a session that takes no lock
    makes none."""
    return locks_root().joinpath(*parts)


def locks_root() -> Path:
    """The root of this machine's lock folders."""
    chosen = os.environ.get(LOCKS_VARIABLE)
    if chosen:
        return Path(chosen)
    if os.access("/run/lock", os.W_OK | os.X_OK):
        return Path("/run/lock/pytest-mlab")
    return Path(tempfile.gettempdir()) / "pytest-mlab-locks"


def open_lock_file(path: Path) -> IO[str]:
    """``path`` opened for reading and appending, made if missing, so that any user's session can
    lock it later (a file made by one user under another's umask would refuse the next). A link
    is not followed."""
    try:
        handle = open(path, "a+", opener=_shared_opener)
    except OSError as exc:
        raise _unusable(path, exc) from None
    try:
        if os.fstat(handle.fileno()).st_uid == os.geteuid():
            os.fchmod(handle.fileno(), SHARED_FILE)
    except OSError:
        pass
    return handle


def _shared_opener(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW, SHARED_FILE)


def make_shared(folder: Path) -> None:
    """``folder`` and its missing parents, each made writable by all (folders that exist are kept
    as they are). A link where a lock folder should be is refused: planted in a shared temporary
    folder, it would send the locks, and the files made there, elsewhere."""
    missing = []
    level = folder
    while not os.path.lexists(level) and level != level.parent:
        missing.append(level)
        level = level.parent
    for level in reversed(missing):
        try:
            level.mkdir()
            os.chmod(level, SHARED_FOLDER)
        except FileExistsError:
            pass
        except OSError as exc:
            raise _unusable(level, exc) from None
    try:
        info = os.lstat(folder)
    except OSError as exc:
        raise _unusable(folder, exc) from None
    if not stat.S_ISDIR(info.st_mode):
        raise SandboxError(f"the lock folder {folder} is not a folder (a link?); remove it, or set {LOCKS_VARIABLE} "
                           "to another folder")


def _unusable(path: Path, exc: OSError) -> SandboxError:
    return SandboxError(f"cannot use the lock file or folder {path} ({exc.strerror}); set {LOCKS_VARIABLE} to a "
                        "folder this user may write")

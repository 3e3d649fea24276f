"""Reading an agent's workspace without ever following a link it made.

The walk holds a directory fd at each level (``os.fwalk``) and opens files with ``O_NOFOLLOW``,
so even a link swapped in mid-walk cannot make a snapshot copy what it points to. Fifos, sockets
and devices are skipped.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Collection, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from pytest_mlab.errors import TraceError

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)

Found = tuple[str, int, str, os.stat_result]  # relative path, dir fd, name, lstat


def walk(top: str, skip: tuple[int, int] | None, dirs: set[str]) -> Iterator[Found]:
    """Yield ``(relative path, dir fd, name, lstat)`` for each symlink and regular file.

    Directories are descended without following links (``os.fwalk``), each directory's entries
    by name, its files before its subdirectories' contents; every directory seen is added to
    ``dirs``. Other file types (fifos, sockets, devices) are skipped; entries that vanish
    mid-walk are skipped; unreadable directories raise.
    """
    for dirpath, dirnames, filenames, dir_fd in os.fwalk(top, onerror=_walk_error):
        prefix = "" if dirpath == top else dirpath[len(top) :].lstrip(os.sep) + "/"
        keep: list[str] = []
        for name in sorted(dirnames + filenames):
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) != skip:
                    keep.append(name)
                    dirs.add(prefix + name)
            elif stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode):
                yield prefix + name, dir_fd, name, st
        dirnames[:] = keep


def _walk_error(exc: OSError) -> None:
    """fwalk's error hook: a vanished directory is fine, an unreadable one is not."""
    if isinstance(exc, FileNotFoundError):
        return
    raise TraceError(f"cannot snapshot {exc.filename}: {exc.strerror or exc}") from exc


def open_regular(rel: str, name: str, dir_fd: int) -> BinaryIO | None:
    """Open a file without following a link; None if it vanished or is no longer a regular file."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None  # swapped for a link since we listed it; the next snapshot sees the link
        raise TraceError(f"cannot snapshot {rel}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return open(fd, "rb")


def unchanged(fh: BinaryIO, before: os.stat_result, *, ctime: bool = True) -> bool:
    """Whether the open file still has the stat it had before it was read (read-only data is
    compared without its ctime, which linking it into the store changes)."""
    after = os.fstat(fh.fileno())
    return (after.st_size, after.st_mtime_ns, after.st_ctime_ns if ctime else 0) == (
        before.st_size, before.st_mtime_ns, before.st_ctime_ns if ctime else 0)


def readlink(name: str, dir_fd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None  # vanished or replaced since we listed it


def dev_ino(path: Path) -> tuple[int, int] | None:
    """The folder's identity, so a walk can skip it (the store may lie inside the workspace)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def normalize_link_paths(link_paths: Collection[str]) -> frozenset[str]:
    """Relative POSIX paths; a directory in the set covers every file below it."""
    if isinstance(link_paths, (str, bytes)):
        raise TypeError("link_paths must be a collection of paths, not a single string")
    return frozenset(
        PurePosixPath(os.fspath(p).replace(os.sep, "/")).as_posix() for p in link_paths
    )


def wants_link(rel: str, links: frozenset[str]) -> bool:
    """Whether ``rel`` is read-only data: named in ``links``, or below a folder that is."""
    if not links:
        return False
    path = rel
    while path:
        if path in links:
            return True
        path = path.rpartition("/")[0]
    return False

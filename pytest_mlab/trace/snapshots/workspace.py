"""Reading an agent's workspace without ever following a link it made.

The walk holds a directory fd at each level (on an explicit stack, never recursion) and opens
directories and files with ``O_NOFOLLOW``, so even a link swapped in mid-walk cannot make a
snapshot copy what it points to. Fifos, sockets and devices are skipped. Every walk is bounded in
depth and entries (:class:`WalkBounds`): beyond them the workspace is the agent's failure.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from collections.abc import Collection, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from pytest_mlab.errors import TraceError, WorkspaceOverLimits
from pytest_mlab.spec.models import DEFAULT_WORKSPACE_DEPTH, DEFAULT_WORKSPACE_FILES

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

Found = tuple[str, int, str, os.stat_result]  # relative path, dir fd, name, lstat


@dataclass(frozen=True)
class WalkBounds:
    """How far a walk goes before it gives up on the workspace: ``depth`` folders nested,
    ``entries`` names listed (files, folders, links, anything). Every walk is bounded, so a folder
    chain thousands deep or millions of files cost a bounded time, a bounded number of open
    directories, and never recursion."""

    depth: int = DEFAULT_WORKSPACE_DEPTH
    entries: int = DEFAULT_WORKSPACE_FILES


def walk(top: str, skip: tuple[int, int] | None, dirs: set[str],
         bounds: WalkBounds = WalkBounds()) -> Iterator[Found]:
    """Yield ``(relative path, dir fd, name, lstat)`` for each symlink and regular file.

    Directories are descended without following links (each opened ``O_NOFOLLOW`` relative to its
    parent's fd), on an explicit stack: each directory's entries by name, its files before its
    subdirectories' contents; every directory seen is added to ``dirs``. Other file types (fifos,
    sockets, devices) are skipped; entries that vanish mid-walk are skipped. A workspace beyond
    ``bounds``, or a directory the harness cannot read, raises :class:`WorkspaceOverLimits`.
    """
    listed = [0]
    root = _open_dir(top, None, ".")
    if root is None:
        return
    stack: list[tuple[int, str, list[str]]] = [(root, "", [])]
    try:
        yield from _entries(stack[-1], skip, dirs, bounds, listed)
        while stack:
            fd, prefix, subdirs = stack[-1]
            if not subdirs:
                os.close(stack.pop()[0])
                continue
            name = subdirs.pop()
            if len(stack) > bounds.depth:
                raise WorkspaceOverLimits(
                    f"the workspace has folders nested more than {bounds.depth:,} deep ({prefix[:60]}...); "
                    "the limit is the task's limits.workspace_depth")
            child = _open_dir(name, fd, prefix + name)
            if child is None:
                continue
            stack.append((child, f"{prefix}{name}/", []))
            yield from _entries(stack[-1], skip, dirs, bounds, listed)
    finally:
        for fd, _prefix, _subdirs in stack:
            os.close(fd)


def _open_dir(name: str, dir_fd: int | None, rel: str) -> int | None:
    """A directory's fd, never through a link; None if it vanished or was swapped for a non-directory."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None  # swapped for a link since we listed it
        raise WorkspaceOverLimits(f"the harness cannot read the workspace folder {rel!r} "
                                  f"({exc.strerror or exc}); leave every folder readable") from exc


def _entries(frame: tuple[int, str, list[str]], skip: tuple[int, int] | None, dirs: set[str],
             bounds: WalkBounds, listed: list[int]) -> Iterator[Found]:
    """One directory's symlinks and regular files; its subdirectories go into the frame's list,
    last name first, for the walk to pop in name order."""
    fd, prefix, subdirs = frame
    names = []
    try:
        with os.scandir(fd) as entries:
            for entry in entries:
                listed[0] += 1
                if listed[0] > bounds.entries:
                    raise WorkspaceOverLimits(
                        f"the workspace holds more than {bounds.entries:,} files, folders and links; "
                        "the limit is the task's limits.workspace_files")
                names.append(entry.name)
    except FileNotFoundError:
        return
    except WorkspaceOverLimits:
        raise
    except OSError as exc:
        raise WorkspaceOverLimits(f"the harness cannot list the workspace folder {prefix or '.'!r} "
                                  f"({exc.strerror or exc}); leave every folder readable") from exc
    found = []
    for name in sorted(names):
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            if (st.st_dev, st.st_ino) != skip:
                found.append(name)
                dirs.add(prefix + name)
        elif stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode):
            yield prefix + name, fd, name, st
    subdirs.extend(reversed(found))


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

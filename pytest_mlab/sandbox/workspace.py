"""The workspace folder on the host, and every file operation the harness does in it.

Each backend (local, bwrap, docker) keeps its workspace in a host folder and does file actions
there itself, between commands, after everything a command started has been killed; only the
way commands run differs. Every path an agent wrote goes through the one path check
(:func:`pytest_mlab.sandbox.paths.resolve_in_workspace`), and every OS error an agent can provoke
becomes an :class:`EnvError` that names its path.

Large read-only data may be hard-linked into the workspace from the data cache
(``copy_in(..., link=True)``). The harness never writes through such a link: a write replaces the
file with one of its own first. :class:`LinkedData` remembers which files are links, so a backend
can also keep the code it runs from writing through them (bwrap binds them read-only, docker
leaves them owned by the harness user).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import weakref
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator

from pytest_mlab.errors import EnvError, SandboxError
from pytest_mlab.sandbox.base import Entry
from pytest_mlab.sandbox.owner import owned_prefix
from pytest_mlab.sandbox.paths import normalize_relpath, resolve_in_workspace


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def remove_tree(path: Path) -> None:
    """Delete a directory the agent may have filled, best effort; never follows symlinks.

    Iterative and in constant file descriptors, whatever the depth (a chain 10,000 folders deep
    included): it goes down one folder at a time relative to the one it holds, back up through
    ``..``, and makes folders the agent made unreadable readable again on the way. What cannot be
    removed is left, and the walk goes on with the rest.
    """
    try:
        fd = os.open(path, _DIR_FLAGS)
    except OSError:
        return  # gone, not a directory, or a symlink (never followed)
    names: list[str] = []  # the folders held below ``path``, outermost first
    stuck: set[tuple[int, int]] = set()  # folders that could not be removed: not entered again
    try:
        while True:
            child = _enter_subfolder(fd, stuck)
            if child is not None:
                name, child_fd = child
                names.append(name)
                os.close(fd)
                fd = child_fd
                continue
            if not names:
                break
            parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
            here = os.fstat(fd)
            os.close(fd)
            fd = parent
            try:
                os.rmdir(names.pop(), dir_fd=fd)
            except OSError:
                stuck.add((here.st_dev, here.st_ino))
    finally:
        os.close(fd)
    try:
        os.rmdir(path)
    except OSError:
        pass


def _enter_subfolder(fd: int, stuck: set[tuple[int, int]]) -> tuple[str, int] | None:
    """Unlink the folder's other entries until a subfolder turns up; that one, opened (name,
    fd), or None once only stuck folders are left. A subfolder that cannot be opened is stuck."""
    try:
        entries = list(os.scandir(fd))
    except OSError:
        return None
    for entry in entries:
        try:
            info = entry.stat(follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                os.unlink(entry.name, dir_fd=fd)
            elif (info.st_dev, info.st_ino) not in stuck:
                try:
                    return entry.name, _open_writable(entry.name, fd)
                except OSError:
                    stuck.add((info.st_dev, info.st_ino))
        except OSError:
            continue
    return None


def _open_writable(name: str, dir_fd: int) -> int:
    """A subfolder's fd, made readable and writable for its owner first where the agent took that away."""
    try:
        child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd)
        child = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        os.chmod(child, 0o700)
    except OSError:
        pass
    return child


@contextmanager
def scratch_folder(kind: str) -> Iterator[Path]:
    """A temp folder named for this process (swept if it dies), removed with :func:`remove_tree`
    (whatever depth code run in it left), unlike ``tempfile.TemporaryDirectory``."""
    path = Path(tempfile.mkdtemp(prefix=owned_prefix(kind)))
    try:
        yield path
    finally:
        remove_tree(path)


class LinkedData:
    """The data files hard-linked into the workspace, by path and by inode."""

    def __init__(self) -> None:
        self._paths: dict[str, tuple[int, int]] = {}  # host path -> (device, inode) it was linked as
        self._inodes: set[tuple[int, int]] = set()  # every inode ever linked, wherever it is now

    def add(self, path: str) -> None:
        info = os.lstat(path)
        key = (info.st_dev, info.st_ino)
        self._paths[path] = key
        self._inodes.add(key)

    def still_linked(self) -> list[str]:
        """The paths that still hold the inode linked there: the harness replaces a linked file
        rather than writing through it, so a replaced one is the agent's own."""
        paths = []
        for path, key in self._paths.items():
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and (info.st_dev, info.st_ino) == key:
                paths.append(path)
        return paths

    def refresh(self) -> None:
        """Take each linked path's identity again, after a mount over the workspace changed the
        device its files report (the quota's overlay, :mod:`.quota_mount`)."""
        for path in self.still_linked_by_inode():
            info = os.lstat(path)
            self._paths[path] = (info.st_dev, info.st_ino)
            self._inodes.add((info.st_dev, info.st_ino))

    def still_linked_by_inode(self) -> list[str]:
        """The paths whose file still has the inode number linked there, on whatever device."""
        paths = []
        for path, (_dev, ino) in self._paths.items():
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and info.st_ino == ino:
                paths.append(path)
        return paths

    def holds(self, info: os.stat_result) -> bool:
        """Whether ``info`` is of a linked inode, under whatever name it has now."""
        return (info.st_dev, info.st_ino) in self._inodes


def _always(_source: str) -> bool:
    return True


class HostWorkspace:
    """A workspace folder on the host: made (and removed at close) here unless one is given.

    ``may_link(source)`` decides whether ``copy_in(..., link=True)`` may hard-link that host
    file; where it says no, the file is copied.
    """

    def __init__(self, root: Path | None = None, *, sandbox: str = "local",
                 may_link: Callable[[str], bool] = _always) -> None:
        self.owned = root is None
        if root is None:
            root = Path(tempfile.mkdtemp(prefix=owned_prefix("ws")))
        else:
            root = Path(root)
            if root.exists() and not root.is_dir():
                raise SandboxError(f"workspace {root} exists and is not a directory")
            root.mkdir(parents=True, exist_ok=True)
        self.root = root.resolve()
        self.linked = LinkedData()
        self._sandbox = sandbox
        self._may_link = may_link
        self.closed = False
        # also runs if the workspace is garbage-collected or the interpreter exits unclosed
        self._remove = weakref.finalize(self, remove_tree, self.root) if self.owned else None

    def check_open(self) -> None:
        if self.closed:
            raise SandboxError(f"the {self._sandbox} sandbox is already closed")

    def close(self) -> None:
        """No more operations; the folder is removed if it was made here. Idempotent."""
        self.closed = True
        if self._remove is not None:
            self._remove()

    def resolve(self, path: str) -> Path:
        """The host path of an agent's workspace path (EnvError if it leads out)."""
        self.check_open()
        return resolve_in_workspace(self.root, path)

    def inside(self, host_path: str | Path) -> bool:
        real = Path(os.path.realpath(host_path))
        return real == self.root or real.is_relative_to(self.root)

    # -- files ---------------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        target = self.resolve(path)
        with _agent_errors(path, "read"):
            fd = _open_regular(target, os.O_RDONLY, path, "read")
            with os.fdopen(fd, "rb") as handle:
                return handle.read()

    def write(self, path: str, data: bytes, *, append: bool = False) -> None:
        """Write (or append to) a file, creating parent directories."""
        target = self.resolve(path)
        if target == self.root or target.is_dir():
            raise EnvError(f"cannot write {path!r}: it is a directory")
        flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
        with _agent_errors(path, "write"):
            target.parent.mkdir(parents=True, exist_ok=True)
            _unshare(target, keep_content=append)
            fd = _open_regular(target, flags, path, "write")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)

    def list(self, path: str) -> list[Entry]:
        """Entries sorted by name; directories report size 0, links leaving the workspace are
        shown as empty files so their targets are not probed."""
        target = self.resolve(path)
        if not target.exists():
            raise EnvError(f"cannot list {path!r}: no such directory in the workspace")
        if not target.is_dir():
            raise EnvError(f"cannot list {path!r}: it is a file, not a directory")
        with _agent_errors(path, "list"), os.scandir(target) as scan:
            entries = [self._entry(item) for item in scan]
        return sorted(entries, key=lambda entry: entry.name)

    def _entry(self, item: os.DirEntry) -> Entry:  # type: ignore[type-arg]
        try:
            if item.is_symlink() and not self.inside(item.path):
                return Entry(item.name, False, 0)
            info = item.stat()
        except OSError:
            return Entry(item.name, False, 0)
        is_dir = stat.S_ISDIR(info.st_mode)
        return Entry(item.name, is_dir, 0 if is_dir else info.st_size)

    def exists(self, path: str) -> bool:
        return self.resolve(path).exists()

    def copy(self, source: str, destination: str) -> None:
        """Copy one file; a destination that is a directory receives it under its own name."""
        src = self.resolve(source)
        if not src.exists():
            raise EnvError(f"cannot copy {source!r}: no such file in the workspace")
        if src.is_dir():
            raise EnvError(f"cannot copy {source!r}: it is a directory; copy one file at a time")
        dst = self.resolve(destination)
        if dst.is_dir():
            name = PurePosixPath(normalize_relpath(source)).name
            dst = self.resolve(f"{normalize_relpath(destination)}/{name}")
        with _agent_errors(destination, "copy to"):
            dst.parent.mkdir(parents=True, exist_ok=True)
            if dst.exists() and os.path.samefile(src, dst):
                raise shutil.SameFileError(str(src))
            _unshare(dst, keep_content=False)
            shutil.copyfile(src, dst)

    def copy_in(self, host_path: Path, path: str, *, link: bool = False) -> None:
        """Put a host file or directory tree at ``path``; ``link=True`` hard-links each file
        (falling back to a copy across devices, or where ``may_link`` says no). The harness then
        never writes through those links, but code the agent runs can unless its backend
        prevents it: link only data that can be restored."""
        host = Path(host_path)
        if not host.exists():
            raise SandboxError(f"cannot copy {host} into the workspace: it does not exist")
        dst = self.resolve(path)
        try:
            if host.is_dir():
                shutil.copytree(
                    host, dst, dirs_exist_ok=True, copy_function=lambda s, d: self._place(s, d, link)
                )
                return
            if dst.is_dir():
                dst = self.resolve(f"{normalize_relpath(path)}/{host.name}")
            dst.parent.mkdir(parents=True, exist_ok=True)
            self._place(str(host), str(dst), link)
        except (shutil.Error, OSError) as exc:
            raise SandboxError(f"cannot copy {host} into the workspace at {path!r}: {exc}") from exc

    def _place(self, source: str, destination: str, link: bool) -> str:
        """Link or copy one file, replacing whatever is there (never writing through it)."""
        if not self.inside(destination):
            raise EnvError(f"{destination!r} leads outside the workspace through a symbolic link")
        if os.path.lexists(destination):
            os.unlink(destination)
        if link and self._may_link(source):
            try:
                os.link(source, destination)
            except OSError:
                pass
            else:
                self.linked.add(destination)
                return destination
        shutil.copy2(source, destination)
        return destination

    def copy_out(self, path: str, host_path: Path) -> None:
        """Copy a file or tree to the host. Symlinks leaving the workspace, symlinked directories
        and special files (FIFOs, sockets, devices) are skipped, so nothing outside leaks out."""
        src = self.resolve(path)
        if not src.exists():
            raise EnvError(f"cannot copy {path!r} out of the workspace: no such file or directory")
        host = Path(host_path)
        try:
            if src.is_dir():
                shutil.copytree(src, host, dirs_exist_ok=True, ignore=self._skipped_entries)
                return
            if not src.is_file():
                raise EnvError(f"cannot copy {path!r} out of the workspace: it is not a regular file")
            host.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, host)
        except (shutil.Error, OSError) as exc:
            raise SandboxError(f"cannot copy {path!r} out of the workspace to {host}: {exc}") from exc

    def _skipped_entries(self, directory: str, names: list[str]) -> set[str]:
        skipped = set()
        for name in names:
            entry = os.path.join(directory, name)
            if os.path.islink(entry):
                if not self.inside(entry) or not os.path.isfile(entry):
                    skipped.add(name)
            elif not os.path.isdir(entry) and not os.path.isfile(entry):
                skipped.add(name)
        return skipped


class OnHostWorkspace:
    """The :class:`~pytest_mlab.sandbox.base.Sandbox` file operations of a backend whose
    workspace is a host folder: each one is its :class:`HostWorkspace`'s (``self.files``)."""

    files: HostWorkspace

    @property
    def workspace(self) -> Path:
        return self.files.root

    def read(self, path: str) -> bytes:
        return self.files.read(path)

    def write(self, path: str, data: bytes, *, append: bool = False) -> None:
        self.files.write(path, data, append=append)

    def list(self, path: str) -> list[Entry]:
        return self.files.list(path)

    def exists(self, path: str) -> bool:
        return self.files.exists(path)

    def copy(self, source: str, destination: str) -> None:
        self.files.copy(source, destination)

    def copy_in(self, host_path: Path, path: str, *, link: bool = False) -> None:
        self.files.copy_in(host_path, path, link=link)

    def copy_out(self, path: str, host_path: Path) -> None:
        self.files.copy_out(path, host_path)


def _unshare(target: Path, *, keep_content: bool) -> None:
    """Give ``target`` its own inode before writing, so a hard-linked data file (``copy_in``
    with ``link=True``) is never modified through the workspace by the harness."""
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode) or info.st_nlink <= 1:
        return
    if keep_content:
        scratch = target.with_name(f".{target.name}.mlab-unshare")
        shutil.copy2(target, scratch)
        os.replace(scratch, target)
    else:
        target.unlink()


def _open_regular(target: Path, flags: int, path: str, verb: str) -> int:
    """Open without blocking on FIFOs and refuse anything that is not a regular file."""
    fd = os.open(target, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise EnvError(f"cannot {verb} {path!r}: it is {what}")
    os.set_blocking(fd, True)
    return fd


@contextmanager
def _agent_errors(path: str, verb: str) -> Iterator[None]:
    """Turn OS errors an agent can provoke into EnvError messages that name its path."""
    try:
        yield
    except FileNotFoundError:
        raise EnvError(f"cannot {verb} {path!r}: no such file or directory in the workspace") from None
    except IsADirectoryError:
        raise EnvError(f"cannot {verb} {path!r}: it is a directory") from None
    except (NotADirectoryError, FileExistsError):
        raise EnvError(f"cannot {verb} {path!r}: a part of the path is a file, not a directory") from None
    except PermissionError:
        raise EnvError(f"cannot {verb} {path!r}: permission denied") from None
    except shutil.SameFileError:
        raise EnvError(f"cannot {verb} {path!r}: source and destination are the same file") from None
    except OSError as exc:
        raise EnvError(f"cannot {verb} {path!r}: {exc.strerror or exc}") from None

"""The local backend: the workspace is a host directory and commands run as host processes.

This backend is for development and trusted agents. It filters the environment, confines every
path the harness handles to the workspace and kills what a command leaves running, but the code
the agent runs still has the harness user's rights on the whole machine: it can read any file
the user can, by absolute path, and use the network. Use the docker or bwrap backend for real
isolation.

Limits: every command runs in the sandbox's cgroups where the cgroup file system is writable
(:mod:`.cgroups`; root on cgroup v1, or a delegated v2 subtree): memory (default 4 GiB) and
process count (default 512) for all the sandbox's processes together. Elsewhere memory is limited
per process by ``RLIMIT_DATA`` and the process count is not limited.

Killing a command's processes: where the sandbox has a cgroup, everything in it is killed after
each command, whatever it did to detach itself (short of moving itself to another cgroup, which
code running as root can do here), and the command's CPU time is the cgroup's. Without a cgroup
it is best effort on Linux (elsewhere only the process group is killed). The command starts in a
new session whose id is its pid; when it ends or times out we SIGKILL (1) its process group, (2)
every process in its session or group, (3) every process seen descending from it while it ran
(``/proc`` is polled a few times a second, so a child that calls ``setsid`` is caught if its
parent was alive at one poll), and (4) every process still holding the write end of its stdout
or stderr pipe. A process that calls ``setsid``, closes or redirects its inherited output, and
loses its parent between two polls escapes all four.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections import deque
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import IO, Callable, Iterable, Iterator, NamedTuple

from pytest_mlab.errors import EnvError, SandboxError
from pytest_mlab.sandbox.base import Entry, ExecResult, Sandbox, SandboxOptions, memory_limit_notice
from pytest_mlab.sandbox.cgroups import Limits
from pytest_mlab.sandbox.environ import clean_environment
from pytest_mlab.sandbox.owner import owned_prefix
from pytest_mlab.sandbox.paths import normalize_relpath, resolve_in_workspace

_CHUNK = 1 << 16
_READ_GRACE_S = 1.0  # how long a reader keeps draining after we gave up on the command
_EOF_WAIT_S = 0.5  # how long killed writers get to release the pipes before we search /proc
_POLL_MAX_S = 0.25  # longest pause between two looks at a running command


# ---------------------------------------------------------------------------------------------
# Output capture


def omission_marker(count: int) -> str:
    """The line that stands where output was dropped, so the agent knows some is missing."""
    return f"\n[... {count} bytes of output omitted ...]\n"


class CappedBuffer:
    """Keeps the first and last ``limit // 2`` bytes of a stream, so memory stays bounded."""

    def __init__(self, limit: int) -> None:
        self._head_limit = max(0, limit) // 2
        self._tail_limit = max(0, limit) // 2
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or self._tail_limit == 0:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        self._trim_tail()

    def _trim_tail(self) -> None:
        excess = self._tail_size - self._tail_limit
        while excess > 0:
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_size -= len(first)
                excess -= len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_size -= excess
                excess = 0

    @property
    def dropped(self) -> int:
        return self.total - len(self._head) - self._tail_size

    def text(self) -> str:
        tail = b"".join(self._tail)
        if not self.dropped:
            return (bytes(self._head) + tail).decode("utf-8", errors="replace")
        head = bytes(self._head).decode("utf-8", errors="replace")
        return head + omission_marker(self.dropped) + tail.decode("utf-8", errors="replace")


def _drain(fd: int, buffer: CappedBuffer, stop: threading.Event) -> None:
    """Read ``fd`` to EOF; once ``stop`` is set, give up after a short grace period.

    Polling (not a blocking read) is what lets us abandon a pipe that an escaped grandchild
    keeps open, so ``exec`` cannot hang on it.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    deadline: float | None = None
    while True:
        if deadline is None and stop.is_set():
            deadline = time.monotonic() + _READ_GRACE_S
        wait_s = 0.1 if deadline is None else max(0.0, deadline - time.monotonic())
        if not poller.poll(wait_s * 1000):
            if deadline is not None:
                return
            continue
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError:
            return
        if not chunk:
            return
        buffer.feed(chunk)
        if deadline is not None and time.monotonic() >= deadline:
            return


def _start_thread(target: Callable[..., None], *args: object) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True, name="mlab-sandbox-io")
    thread.start()
    return thread


def _feed_stdin(pipe, text: str) -> None:  # type: ignore[no-untyped-def]
    """Write stdin from a thread: a command that never reads it must not block the harness."""
    try:
        pipe.write(text.encode("utf-8"))
    except OSError:
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def _join_all(threads: Iterable[threading.Thread], timeout_s: float) -> bool:
    """Join threads within one shared deadline; True when all of them finished."""
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in threads)


# ---------------------------------------------------------------------------------------------
# Process bookkeeping (Linux /proc; everything degrades to "nothing found" elsewhere)


class _Proc(NamedTuple):
    ppid: int
    pgrp: int
    sid: int
    start: int  # clock ticks since boot; tells a reused pid from the process we saw
    state: str


def _parse_stat(data: bytes) -> _Proc | None:
    """Parse ``/proc/PID/stat``; the command name may contain spaces and parentheses."""
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        numbers = [int(fields[index]) for index in (1, 2, 3, 19)]
        return _Proc(*numbers, state=fields[0].decode())
    except (IndexError, ValueError):
        return None


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _scan_procs() -> dict[int, _Proc]:
    """Every live (non-zombie) process we can see."""
    procs: dict[int, _Proc] = {}
    for pid in _pids():
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                proc = _parse_stat(handle.read())
        except OSError:
            continue
        if proc is not None and proc.state not in ("Z", "X"):
            procs[pid] = proc
    return procs


def _writes_to(pid: int, fd: str) -> bool:
    """Whether ``pid`` has ``fd`` open for writing (``/proc/PID/fdinfo`` flags)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    except (OSError, ValueError, IndexError):
        return False
    return False


def _pipe_writers(inodes: set[int]) -> set[int]:
    """Processes (other than us) holding the write end of any of these pipes."""
    links = {f"pipe:[{inode}]" for inode in inodes}
    me = os.getpid()
    holders: set[int] = set()
    for pid in _pids():
        if pid == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link in links and _writes_to(pid, fd):
                holders.add(pid)
                break
    return holders


def _signal_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _ProcessTree:
    """What one command started, remembered by (pid, start time) so reused pids are spared."""

    def __init__(self, root_pid: int) -> None:
        self.root = root_pid
        self.known: dict[int, int] = {}

    def track(self) -> None:
        """Record the current descendants; called repeatedly while the command runs."""
        procs = _scan_procs()
        for pid in self._members(procs):
            self.known[pid] = procs[pid].start

    def _members(self, procs: dict[int, _Proc], extra: Iterable[int] = ()) -> set[int]:
        members = {
            pid
            for pid, proc in procs.items()
            if proc.sid == self.root or proc.pgrp == self.root or self.known.get(pid) == proc.start
        }
        members.update(pid for pid in extra if pid in procs)
        children: dict[int, list[int]] = {}
        for pid, proc in procs.items():
            children.setdefault(proc.ppid, []).append(pid)
        stack = [self.root, *members]
        while stack:
            for child in children.get(stack.pop(), ()):
                if child not in members:
                    members.add(child)
                    stack.append(child)
        members.discard(os.getpid())
        return members

    def kill(self, extra: Iterable[int] = ()) -> None:
        """SIGKILL the group and every member found; a second round catches late forks."""
        extra = set(extra)
        _signal_group(self.root)
        for _ in range(2):
            procs = _scan_procs()
            members = self._members(procs, extra)
            if not members:
                return
            for pid in members:
                self.known[pid] = procs[pid].start
                if procs[pid].pgrp == pid:
                    _signal_group(pid)
                _signal_pid(pid)


def _kill_known(known: dict[int, int]) -> None:
    """Kill processes recorded earlier if they are still the same processes."""
    procs = _scan_procs()
    for pid, start in known.items():
        if pid in procs and procs[pid].start == start and pid != os.getpid():
            _signal_pid(pid)


def _open_pidfd(pid: int) -> int | None:
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return pidfd_open(pid)
    except OSError:
        return None


def _exited(proc: subprocess.Popen) -> bool:  # type: ignore[type-arg]
    """Whether the command ended, leaving it unreaped where possible so its pid (and thus its
    process group id) cannot be reused before we kill the group."""
    waitid = getattr(os, "waitid", None)
    if waitid is None:
        return proc.poll() is not None
    try:
        return waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _wait_for_exit(
    proc: subprocess.Popen,  # type: ignore[type-arg]
    deadline: float,
    tick: Callable[[], None],
) -> bool:
    """Wait until the command ends (True) or ``deadline`` passes (False), calling ``tick``
    between short waits so descendants get recorded while their parents are alive."""
    pidfd = _open_pidfd(proc.pid)
    pause = 0.01
    try:
        while True:
            if _exited(proc):
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            step = min(remaining, pause)
            if pidfd is not None:
                select.select([pidfd], [], [], step)
            else:
                time.sleep(step)
            if _exited(proc):
                return True
            tick()
            pause = min(pause * 2, _POLL_MAX_S)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _reap(proc: subprocess.Popen) -> float | None:  # type: ignore[type-arg]
    """Reap the command and return its CPU seconds (user + system) as the kernel accounts them
    at reaping: the command's own plus those of every descendant that was waited for, down the
    tree. Nothing the command runs can change this number; it is read by the harness, outside
    the command's processes.

    A process that escapes being reaped by the command (a double-forked daemon, reparented to
    init) is not counted; the sandbox's cgroup, where there is one, counts it (see ``_account``).
    The local backend is not an isolation boundary anyway. A wrapper can hide the count (see
    ``LocalSandbox.reaping_counts_cpu``). None where the platform has no ``wait4``.
    """
    wait4 = getattr(os, "wait4", None)
    if wait4 is None:
        proc.wait()
        return None
    while True:
        try:
            _pid, status, usage = wait4(proc.pid, 0)
        except ChildProcessError:  # already reaped (by Popen itself): the exit code is known, the usage is not
            proc.wait()
            return None
        except InterruptedError:
            continue
        proc.returncode = os.waitstatus_to_exitcode(status)
        return usage.ru_utime + usage.ru_stime


# ---------------------------------------------------------------------------------------------
# Filesystem helpers


def _remove_tree(path: Path) -> None:
    """Delete a directory the agent may have made unreadable; never follows symlinks."""
    if not path.exists():
        return
    for dirpath, dirnames, _files in os.walk(path):
        for name in dirnames:
            child = os.path.join(dirpath, name)
            if not os.path.islink(child):
                try:
                    os.chmod(child, 0o700)
                except OSError:
                    pass
    shutil.rmtree(path, ignore_errors=True)


def _release(leftovers: dict[int, int], home: Path, workspace: Path | None) -> None:
    """Kill what earlier commands left running and delete the sandbox's own directories."""
    _kill_known(leftovers)
    _remove_tree(home)
    if workspace is not None:
        _remove_tree(workspace)


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
        raise EnvError(
            f"cannot {verb} {path!r}: a part of the path is a file, not a directory"
        ) from None
    except PermissionError:
        raise EnvError(f"cannot {verb} {path!r}: permission denied") from None
    except shutil.SameFileError:
        raise EnvError(f"cannot {verb} {path!r}: source and destination are the same file") from None
    except OSError as exc:
        raise EnvError(f"cannot {verb} {path!r}: {exc.strerror or exc}") from None


# ---------------------------------------------------------------------------------------------
# The backend


class LocalSandbox(Sandbox):
    """Workspace = host directory; commands = host processes with a filtered environment."""

    name = "local"
    python = sys.executable  # the harness's interpreter: the one with the task's packages
    #: Whether the kernel's count at reaping the command (``_reap``) covers the CPU time of what
    #: it ran. True for a plain process tree. A backend that wraps commands must say so itself
    #: (subclasses default to False, see ``__init_subclass__``): bwrap's pid 1, which reaps the
    #: command, is never reaped by the process the harness waits for, so its count is lost. Where
    #: this is False and no cgroup counts, ``cpu_time`` is None and timed grading says so.
    reaping_counts_cpu = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.reaping_counts_cpu = bool(cls.__dict__.get("reaping_counts_cpu", False))

    def __init__(
        self,
        workspace: Path | None = None,
        *,
        base_env: dict[str, str] | None = None,
        options: SandboxOptions | None = None,
    ) -> None:
        self.options = options or SandboxOptions()
        self._owns_workspace = workspace is None
        if workspace is None:
            workspace = Path(tempfile.mkdtemp(prefix=owned_prefix("ws")))
        else:
            workspace = Path(workspace)
            if workspace.exists() and not workspace.is_dir():
                raise SandboxError(f"workspace {workspace} exists and is not a directory")
            workspace.mkdir(parents=True, exist_ok=True)
        self._root = workspace.resolve()
        self._home = Path(tempfile.mkdtemp(prefix=owned_prefix("home"))).resolve()
        self._tmp = self._home / "tmp"
        self._tmp.mkdir()
        self._base_env = dict(base_env or {})
        self._leftovers: dict[int, int] = {}
        self._limits: Limits | None = None  # made by the first command (docker never needs them)
        self._closed = False
        # Also runs if the sandbox is garbage-collected or the interpreter exits unclosed, so
        # temp dirs and stray processes do not outlive a caller that forgot ``close``.
        self._release = weakref.finalize(
            self, _release, self._leftovers, self._home, self._root if self._owns_workspace else None
        )

    # -- paths ---------------------------------------------------------------------------------

    @property
    def workspace(self) -> Path:
        return self._root

    @property
    def limits(self) -> Limits:
        """The cgroups (or rlimits) every command of this sandbox runs under, made on first use."""
        if self._limits is None:
            self._limits = Limits.for_sandbox(self.options)
            weakref.finalize(self, self._limits.close)
        return self._limits

    @property
    def home(self) -> Path:
        """The private HOME executed code sees (outside the workspace, removed at close)."""
        return self._home

    def _resolve(self, path: str) -> Path:
        self._check_open()
        return resolve_in_workspace(self._root, path)

    def _inside(self, host_path: str | Path) -> bool:
        real = Path(os.path.realpath(host_path))
        return real == self._root or real.is_relative_to(self._root)

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("the local sandbox is already closed")

    # -- files ---------------------------------------------------------------------------------

    def read(self, path: str) -> bytes:
        target = self._resolve(path)
        with _agent_errors(path, "read"):
            fd = _open_regular(target, os.O_RDONLY, path, "read")
            with os.fdopen(fd, "rb") as handle:
                return handle.read()

    def write(self, path: str, data: bytes, *, append: bool = False) -> None:
        """Write (or append to) a file, creating parent directories."""
        target = self._resolve(path)
        if target == self._root or target.is_dir():
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
        target = self._resolve(path)
        if not target.exists():
            raise EnvError(f"cannot list {path!r}: no such directory in the workspace")
        if not target.is_dir():
            raise EnvError(f"cannot list {path!r}: it is a file, not a directory")
        with _agent_errors(path, "list"), os.scandir(target) as scan:
            entries = [self._entry(item) for item in scan]
        return sorted(entries, key=lambda entry: entry.name)

    def _entry(self, item: os.DirEntry) -> Entry:  # type: ignore[type-arg]
        try:
            if item.is_symlink() and not self._inside(item.path):
                return Entry(item.name, False, 0)
            info = item.stat()
        except OSError:
            return Entry(item.name, False, 0)
        is_dir = stat.S_ISDIR(info.st_mode)
        return Entry(item.name, is_dir, 0 if is_dir else info.st_size)

    def exists(self, path: str) -> bool:
        return self._resolve(path).exists()

    def copy(self, source: str, destination: str) -> None:
        """Copy one file; a destination that is a directory receives it under its own name."""
        src = self._resolve(source)
        if not src.exists():
            raise EnvError(f"cannot copy {source!r}: no such file in the workspace")
        if src.is_dir():
            raise EnvError(f"cannot copy {source!r}: it is a directory; copy one file at a time")
        dst = self._resolve(destination)
        if dst.is_dir():
            name = PurePosixPath(normalize_relpath(source)).name
            dst = self._resolve(f"{normalize_relpath(destination)}/{name}")
        with _agent_errors(destination, "copy to"):
            dst.parent.mkdir(parents=True, exist_ok=True)
            if dst.exists() and os.path.samefile(src, dst):
                raise shutil.SameFileError(str(src))
            _unshare(dst, keep_content=False)
            shutil.copyfile(src, dst)

    def copy_in(self, host_path: Path, path: str, *, link: bool = False) -> None:
        """Put a host file or directory tree at ``path``; ``link=True`` hard-links each file
        (falling back to a copy across devices). The harness then never writes through those
        links, but code the agent runs can: link only data that can be restored."""
        host = Path(host_path)
        if not host.exists():
            raise SandboxError(f"cannot copy {host} into the workspace: it does not exist")
        dst = self._resolve(path)
        try:
            if host.is_dir():
                shutil.copytree(
                    host, dst, dirs_exist_ok=True, copy_function=lambda s, d: self._place(s, d, link)
                )
                return
            if dst.is_dir():
                dst = self._resolve(f"{normalize_relpath(path)}/{host.name}")
            dst.parent.mkdir(parents=True, exist_ok=True)
            self._place(str(host), str(dst), link)
        except shutil.Error as exc:
            raise SandboxError(f"cannot copy {host} into the workspace at {path!r}: {exc}") from exc
        except OSError as exc:
            raise SandboxError(f"cannot copy {host} into the workspace at {path!r}: {exc}") from exc

    def _place(self, source: str, destination: str, link: bool) -> str:
        """Link or copy one file, replacing whatever is there (never writing through it)."""
        if not self._inside(destination):
            raise EnvError(f"{destination!r} leads outside the workspace through a symbolic link")
        if os.path.lexists(destination):
            os.unlink(destination)
        if link:
            try:
                os.link(source, destination)
                return destination
            except OSError:
                pass
        shutil.copy2(source, destination)
        return destination

    def copy_out(self, path: str, host_path: Path) -> None:
        """Copy a file or tree to the host. Symlinks leaving the workspace, symlinked directories
        and special files (FIFOs, sockets, devices) are skipped, so nothing outside leaks out."""
        src = self._resolve(path)
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
                if not self._inside(entry) or not os.path.isfile(entry):
                    skipped.add(name)
            elif not os.path.isdir(entry) and not os.path.isfile(entry):
                skipped.add(name)
        return skipped

    # -- commands ------------------------------------------------------------------------------

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        """An allow-list, never the harness environment: API keys and the like stay out.
        ``base_env`` and then ``env`` override the defaults."""
        return clean_environment(
            {"HOME": str(self._home), "TMPDIR": str(self._tmp), **self._base_env, **(env or {})}
        )

    def exec(
        self,
        argv: list[str],
        *,
        timeout: float,
        output_limit: int,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        self._check_open()
        if not argv:
            raise SandboxError("exec needs a command to run, got an empty argv")
        environment = self._environment(env)
        if not self._runnable(argv[0], environment):
            raise SandboxError(f"could not start {argv[0]!r} in the {self.name} sandbox: no such program")
        limits = self.limits
        cpu_before, oom_before = limits.cpu_seconds(), limits.oom_kills()
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                [*limits.prefix(), *argv],
                cwd=self._root,
                env=environment,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise SandboxError(f"could not start {argv[0]!r} in the local sandbox: {exc}") from exc
        result = self._supervise(proc, started, timeout, output_limit, stdin)
        return self._account(result, cpu_before, oom_before)

    def _runnable(self, program: str, environment: dict[str, str]) -> bool:
        """Whether ``program`` names an executable, as the command's ``exec`` will look it up
        (the limits prefix would otherwise turn a missing program into a shell error)."""
        if "/" in program:
            return os.access(self._root / program, os.X_OK)
        return shutil.which(program, path=environment.get("PATH", os.defpath)) is not None

    def _account(self, result: ExecResult, cpu_before: float | None, oom_before: int) -> ExecResult:
        """Kill whatever escaped the process tree but not the cgroup, then report from the cgroup:
        its CPU time (which counts escaped and unreaped processes too) and memory-limit kills."""
        limits = self.limits
        limits.kill()
        cpu_after = limits.cpu_seconds()
        if cpu_before is not None and cpu_after is not None:
            # the larger of the two: the cgroup also counts escaped processes, rusage also counts a
            # process that moved itself out of the cgroup (possible for root) but was reaped
            counted = max(0.0, cpu_after - cpu_before)
            result = replace(result, cpu_time=max(counted, result.cpu_time or 0.0))
        if limits.oom_kills() > oom_before:
            result = replace(result, stderr=result.stderr + memory_limit_notice(limits.memory or 0))
        return result

    def _supervise(
        self,
        proc: subprocess.Popen,  # type: ignore[type-arg]
        started: float,
        timeout: float,
        output_limit: int,
        stdin: str | None,
    ) -> ExecResult:
        """Collect output, enforce the timeout, then kill whatever the command left behind."""
        assert proc.stdout is not None and proc.stderr is not None
        tree = _ProcessTree(proc.pid)
        pipes = (proc.stdout, proc.stderr)
        buffers = (CappedBuffer(output_limit), CappedBuffer(output_limit))
        stop = threading.Event()
        readers = [_start_thread(_drain, pipe.fileno(), buf, stop) for pipe, buf in zip(pipes, buffers)]
        feeder = _start_thread(_feed_stdin, proc.stdin, stdin) if stdin is not None else None
        exited = False
        cpu_time: float | None = None
        try:
            exited = _wait_for_exit(proc, started + max(0.0, timeout), tree.track)
        finally:
            tree.kill()
            cpu_time = _reap(proc)
            if not self.reaping_counts_cpu:
                cpu_time = None
            self._release_pipes(tree, pipes, readers, stop)
            if feeder is not None:
                feeder.join(_READ_GRACE_S)
            self._leftovers.update(tree.known)
        return ExecResult(
            returncode=proc.returncode if exited else None,
            stdout=buffers[0].text(),
            stderr=buffers[1].text(),
            timed_out=not exited,
            duration=time.monotonic() - started,
            truncated_bytes=buffers[0].dropped + buffers[1].dropped,
            cpu_time=cpu_time,
        )

    @staticmethod
    def _release_pipes(
        tree: _ProcessTree,
        pipes: tuple[IO[bytes], IO[bytes]],
        readers: list[threading.Thread],
        stop: threading.Event,
    ) -> None:
        """Let readers reach EOF; if something still holds a pipe, kill it and stop reading."""
        if not _join_all(readers, _EOF_WAIT_S):
            inodes = {os.fstat(pipe.fileno()).st_ino for pipe in pipes}
            tree.kill(extra=_pipe_writers(inodes))
        stop.set()
        _join_all(readers, _READ_GRACE_S + 2.0)
        for pipe in pipes:
            pipe.close()

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._limits is not None:
            self._limits.close()
        self._release()

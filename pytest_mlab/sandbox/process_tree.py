"""The processes one command started, and how to end every one of them.

Linux only (``/proc``); elsewhere every look finds nothing and only the process group is killed.
The command starts in a new session whose id is its pid; when it ends or times out we SIGKILL
(1) its process group, (2) every process in its session or group, (3) every process seen
descending from it while it ran (``/proc`` is polled a few times a second, so a child that calls
``setsid`` is caught if its parent was alive at one poll), and (4) every process still holding
the write end of its stdout or stderr pipe (:func:`pipe_writers`). A process that calls
``setsid``, closes or redirects its inherited output, and loses its parent between two polls
escapes all four; a cgroup or a pid namespace, where there is one, catches it.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from typing import Callable, Iterable, NamedTuple

_POLL_MAX_S = 0.25  # longest pause between two looks at a running command


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


def pipe_writers(inodes: set[int]) -> set[int]:
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


class ProcessTree:
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

    def kill_group(self) -> None:
        """SIGKILL the command's process group only: enough where a pid namespace holds the rest."""
        _signal_group(self.root)

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


def kill_known(known: dict[int, int]) -> None:
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


def wait_for_exit(
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


def reap(proc: subprocess.Popen) -> float | None:  # type: ignore[type-arg]
    """Reap the command and return its CPU seconds (user + system) as the kernel accounts them
    at reaping: the command's own plus those of every descendant that was waited for, down the
    tree. Nothing the command runs can change this number; it is read by the harness, outside
    the command's processes.

    A process that escapes being reaped by the command (a double-forked daemon, reparented to
    init) is not counted; the sandbox's cgroup, where there is one, counts it. The local backend
    is not an isolation boundary anyway. A wrapper can hide the count (see
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

"""Who created a leftover (a temp folder, a cgroup, a container), so clean-up removes only those
of processes that are gone.

An owner is a pid plus the process's start time in clock ticks since boot: a reused pid has
another start time, so a dead process's folder is never kept for a newcomer with its pid, nor a
live process's removed. A pid means something only in its pid namespace (graders run in one of
their own), so names also carry the namespace; an owner is judged only by a process of the same
namespace on the same machine, and kept otherwise.
"""

from __future__ import annotations

import os
import re
import socket

# mlab-<kind>-<pid>-<start ticks>-<pid namespace>-<anything>: what ``owned_prefix`` names and the sweeps look for
_OWNED_NAME = re.compile(r"^mlab-(?P<kind>[a-z]+)-(?P<pid>\d+)-(?P<ticks>\d+)-(?P<namespace>\d+)-")


def start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of ``/proc/PID/stat``), or
    None when there is no such process (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
        return data[data.rfind(b")") + 2:].split()[19].decode()
    except (OSError, IndexError):
        return None


def _alive(pid: int, ticks: str) -> bool:
    return start_ticks(pid) == ticks


def pid_namespace() -> str | None:
    """This process's pid namespace (its inode number), or None without /proc."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None


def owned_prefix(kind: str) -> str:
    """``mlab-<kind>-<pid>-<start ticks>-<pid namespace>-``: the prefix of every temp folder
    (``mkdtemp``, ``TemporaryDirectory``) and cgroup the harness creates, so the sweeps can tell
    whose it is. Without /proc the name carries no owner and is never swept."""
    ticks, namespace = start_ticks(os.getpid()), pid_namespace()
    return f"mlab-{kind}-{os.getpid()}-{ticks}-{namespace}-" if ticks and namespace else f"mlab-{kind}-"


def name_owner_gone(name: str) -> bool:
    """Whether ``name`` was made by ``owned_prefix`` for a process that no longer exists. Names
    that carry no owner, or one of another pid namespace, are never judged gone."""
    match = _OWNED_NAME.match(name)
    if not match or match["namespace"] != pid_namespace():
        return False
    return not _alive(int(match["pid"]), match["ticks"])


def owner_label() -> str:
    """``host:pid:start ticks`` of this process, for labels on things outside this machine's
    file system (docker containers)."""
    return f"{socket.gethostname()}:{os.getpid()}:{start_ticks(os.getpid()) or '?'}"


def owner_here(label: str) -> bool:
    """Whether an ``owner_label`` names a process of this machine (only then can its pid be judged)."""
    return label.partition(":")[0] == socket.gethostname()


def owner_gone(label: str) -> bool:
    """Whether the process an ``owner_label`` names is gone (only decidable on its own host)."""
    host, _, rest = label.partition(":")
    pid, _, ticks = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return ticks == "?" or not _alive(int(pid), ticks)

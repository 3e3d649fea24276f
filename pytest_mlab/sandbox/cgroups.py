"""One cgroup per sandbox (or per task-code call): memory and process limits for everything its
commands start, CPU accounting measured from outside them, and a kill that reaches every process
in it, however it detached itself (``setsid``, double forks).

A cgroup binds a whole process tree at once, and it binds root, which ``RLIMIT_NPROC`` does not.
Creating one needs write access to the cgroup file system: root on a cgroup v1 host, or a
delegated cgroup v2 subtree. Where neither is available, :class:`Limits` falls back to
``RLIMIT_DATA`` for memory (per process, heap and private writable mappings only) and the number
of processes is not limited (``RLIMIT_NPROC`` counts all of the user's processes, not the
sandbox's); ``RLIMIT_AS`` is never used because TensorFlow and JAX reserve far more virtual
memory than they use.

Groups are named for the process that created them (:func:`pytest_mlab.sandbox.owner.owned_prefix`),
so :func:`sweep` can remove those of dead workers and sessions and kill what still runs in them.
Removal kills first, then retries ``rmdir`` for a moment while killed processes finish exiting; a
group that stays busy is left to the next sweep.
"""

from __future__ import annotations

import os
import shlex
import signal
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_mlab.sandbox.owner import name_owner_gone, owned_prefix
from pytest_mlab.sandbox.tree_walk import Bound, walk_tree
from pytest_mlab.sandbox.workspace import remove_tree
from pytest_mlab.spec.models import DEFAULT_DISK, DEFAULT_MEMORY, DEFAULT_PIDS

if TYPE_CHECKING:
    from pytest_mlab.sandbox.base import SandboxOptions

_ROOT = Path("/sys/fs/cgroup")
# cgroup v1 hierarchies a group is made in: the two limits, and CPU accounting
_V1_CONTROLLERS = ("memory", "pids", "cpuacct")
_KILL_ROUNDS = 100  # SIGKILL sweeps over a group before giving up (a fork storm refills it)
_RMDIR_TRIES = 6  # a group stays busy for a moment while its killed processes exit
# the groups a kill looks in (deeper ones are still removed, by remove_tree): agent code that may
# write the cgroup file system (root under local) could nest its own
_GROUP_BOUND = Bound(depth=100, entries=10_000)
_RMDIR_PAUSE_S = 0.01  # doubled after every failed try: 0.01 + 0.02 + ... = 0.63 s at most


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for ``controller`` ("" names the unified v2 hierarchy)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def _unified() -> bool:
    return (_ROOT / "cgroup.controllers").exists()


def _bases() -> list[tuple[str, Path]]:
    """Where this process makes its groups: (controller, parent folder); "" is cgroup v2."""
    if _unified():
        own = _own_path("")
        return [] if own is None else [("", _ROOT / own.lstrip("/"))]
    bases, hierarchies = [], set()
    for controller in _V1_CONTROLLERS:
        own = _own_path(controller)
        hierarchy = os.path.realpath(_ROOT / controller)  # "cpuacct" may be a link to "cpu,cpuacct"
        if own is not None and os.path.isdir(hierarchy) and hierarchy not in hierarchies:
            hierarchies.add(hierarchy)
            bases.append((controller, _ROOT / controller / own.lstrip("/")))
    return bases


def _make_group(base: Path, kind: str, label: str) -> Path | None:
    """A fresh child cgroup under ``base`` named for its owner, or None where we may not create one
    or could not move a process into it (that takes write access to ``base``'s own process list)."""
    if not os.access(base / "cgroup.procs", os.W_OK):
        return None
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in label)[:40]
    group = base / f"{owned_prefix(kind)}{safe + '-' if safe else ''}{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def _members(group: Path) -> list[int]:
    try:
        return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def kill_group(group: Path) -> bool:
    """SIGKILL every process in ``group`` and its child groups until none is left (v2: one write
    to ``cgroup.kill``; v1: repeated sweeps over ``cgroup.procs``, which catch processes forked
    during a sweep). True when the group is empty."""
    groups = [group, *(Path(path) for path, _info in walk_tree(group, _GROUP_BOUND, folders_only=True))]
    if (group / "cgroup.kill").exists():
        _write(group / "cgroup.kill", "1")
    for _ in range(_KILL_ROUNDS):
        members = [pid for folder in groups for pid in _members(folder)]
        if not members:
            return True
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.001)
    return False


def remove_group(group: Path) -> bool:
    """Kill what runs in ``group``, then remove it (child groups first), retrying while the
    kernel still counts exiting processes in it. True when it is gone."""
    pause = _RMDIR_PAUSE_S
    for attempt in range(_RMDIR_TRIES):
        kill_group(group)
        # child groups first, each by its folder's fd (no path length or recursion limit on how deep)
        remove_tree(group)
        if not os.path.lexists(group):
            return True
        if attempt == _RMDIR_TRIES - 1:
            return False
        time.sleep(pause)
        pause *= 2
    return False


class Limits:
    """The cgroups of one sandbox or call: created at construction, emptied and removed by :meth:`close`.

    ``memory`` and ``pids`` of None mean "not limited": the groups are still made, for
    :meth:`kill` and :meth:`cpu_seconds`.
    """

    def __init__(self, memory: int | None, pids: int | None, label: str, *, kind: str = "sandbox",
                 file_size: int | None = None) -> None:
        self.memory = memory
        self.pids = pids
        self.file_size = file_size  # RLIMIT_FSIZE of every process: no file written may grow past it
        self.groups: list[Path] = []
        self.enforced: dict[str, str] = {}  # limit ("memory", "pids", "cpu") -> how it is enforced
        for controller, base in _bases():
            group = _make_group(base, kind, label)
            if group is not None:
                self.groups.append(group)
                self._configure(group, unified=controller == "")
        if memory and "memory" not in self.enforced:
            self.enforced["memory"] = "RLIMIT_DATA (per process)"

    @classmethod
    def for_sandbox(cls, options: "SandboxOptions") -> "Limits":
        """A sandbox's limits: the task's, else the defaults (4 GiB, 512 processes, files of at most
        the 32 GiB disk quota)."""
        return cls(options.memory or DEFAULT_MEMORY, options.pids or DEFAULT_PIDS, options.label,
                   file_size=options.disk or DEFAULT_DISK)

    def _configure(self, group: Path, *, unified: bool) -> None:
        """Write the limits a group's controllers take (a v1 hierarchy may hold several)."""
        if self.memory:
            if _write(group / "memory.max", str(self.memory)):
                _write(group / "memory.swap.max", "0")
                self.enforced["memory"] = "cgroup v2"
            elif _write(group / "memory.limit_in_bytes", str(self.memory)):
                _write(group / "memory.memsw.limit_in_bytes", str(self.memory))  # no swap, where accounted
                self.enforced["memory"] = "cgroup v1"
        if self.pids and _write(group / "pids.max", str(self.pids)):
            self.enforced["pids"] = "cgroup v2" if unified else "cgroup v1"
        if (group / ("cpu.stat" if unified else "cpuacct.usage")).exists():
            self.enforced["cpu"] = "cgroup v2" if unified else "cgroup v1"

    def prefix(self) -> list[str]:
        """A command prefix that joins the cgroups (or sets the rlimit), then execs the rest."""
        steps = self.shell_steps()
        if not steps:
            return []
        return ["/bin/sh", "-c", " && ".join([*steps, 'exec "$@"']), "mlab-limits"]

    def shell_steps(self) -> list[str]:
        """The shell commands by which a process joins the cgroups and sets the rlimits (none
        when nothing limits the sandbox); a command's shell runs them before it execs."""
        steps = [f"echo $$ > {shlex.quote(str(group / 'cgroup.procs'))}" for group in self.groups]
        if self.memory and self.enforced.get("memory", "").startswith("RLIMIT"):
            steps.append(f"ulimit -d {max(1, self.memory // 1024)}")
        if self.file_size:  # POSIX sh counts -f in 512-byte blocks; a write past it fails with EFBIG
            steps.append(f"ulimit -f {max(1, self.file_size // 512)}")
        return steps

    def oom_kills(self) -> int:
        """How many processes the memory limit has killed so far (0 where no cgroup tells)."""
        total = 0
        for group in self.groups:
            for name in ("memory.oom_control", "memory.events"):
                try:
                    text = (group / name).read_text()
                except OSError:
                    continue
                total += sum(int(line.split()[1]) for line in text.splitlines() if line.startswith("oom_kill "))
        return total

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system) used so far by every process that ever ran in the group,
        reaped or not; None where no cgroup accounts for it."""
        for group in self.groups:
            try:
                if (group / "cpuacct.usage").exists():
                    return int((group / "cpuacct.usage").read_text()) / 1e9
                for line in (group / "cpu.stat").read_text().splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
            except (OSError, ValueError):
                continue
        return None

    def kill(self) -> None:
        """SIGKILL everything still running in the groups (call between commands and at the end)."""
        for group in self.groups:
            kill_group(group)

    def close(self) -> None:
        """Kill what is left, then remove the groups; one that stays busy is left for :func:`sweep`."""
        for group in self.groups:
            remove_group(group)
        self.groups = []


def sweep(bases: list[Path] | None = None) -> list[Path]:
    """Remove the groups of dead owners under ``bases`` (default: where this process makes its
    own), killing what still runs in them. Groups of live processes, and groups not named for an
    owner, are left alone. Returns the groups removed."""
    removed = []
    for base in bases if bases is not None else [base for _controller, base in _bases()]:
        try:
            names = sorted(entry.name for entry in os.scandir(base) if entry.is_dir(follow_symlinks=False))
        except OSError:
            continue
        for name in names:
            if name_owner_gone(name) and remove_group(base / name):
                removed.append(base / name)
    return removed

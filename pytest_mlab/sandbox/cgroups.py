"""Memory and process-count limits for everything one sandbox runs, through a cgroup when we may.

A cgroup limits a whole process tree at once, and it binds root, which ``RLIMIT_NPROC`` does
not. Creating one needs write access to the cgroup file system: root on a cgroup v1 host, or a
delegated cgroup v2 subtree. Where neither is available, :class:`Limits` falls back to
``RLIMIT_DATA`` (per process, heap and private writable mappings only); ``RLIMIT_AS`` is never
used because TensorFlow and JAX reserve far more virtual memory than they use.
"""

from __future__ import annotations

import os
import shlex
import uuid
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")
DEFAULT_PIDS = 4096  # a fork-bomb guard that still leaves room for thread-hungry libraries


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


def _make_group(base: Path, label: str) -> Path | None:
    """A fresh child cgroup under ``base``, or None where we may not create one."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in label)[:60]
    group = base / f"mlab-{safe}-{uuid.uuid4().hex[:8]}"
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


class Limits:
    """The limits of one sandbox: cgroups created at construction, removed by :meth:`close`."""

    def __init__(self, memory: int | None, pids: int | None, label: str) -> None:
        self.memory = memory
        self.pids = pids or DEFAULT_PIDS
        self.groups: list[Path] = []
        self.enforced: dict[str, str] = {}  # limit -> how it is enforced, for docs and tests
        if (_ROOT / "cgroup.controllers").exists():
            self._unified(label)
        else:
            self._legacy(label)
        if memory and "memory" not in self.enforced:
            self.enforced["memory"] = "RLIMIT_DATA (per process)"

    def _unified(self, label: str) -> None:
        own = _own_path("")
        if own is None:
            return
        group = _make_group(_ROOT / own.lstrip("/"), label)
        if group is None:
            return
        self.groups.append(group)
        if self.memory and _write(group / "memory.max", str(self.memory)):
            _write(group / "memory.swap.max", "0")
            self.enforced["memory"] = "cgroup v2"
        if _write(group / "pids.max", str(self.pids)):
            self.enforced["pids"] = "cgroup v2"

    def _legacy(self, label: str) -> None:
        for controller, limit_file, value in (("memory", "memory.limit_in_bytes", self.memory),
                                              ("pids", "pids.max", self.pids)):
            own = _own_path(controller)
            if value is None or own is None:
                continue
            group = _make_group(_ROOT / controller / own.lstrip("/"), label)
            if group is None:
                continue
            self.groups.append(group)
            if _write(group / limit_file, str(value)):
                self.enforced[controller] = "cgroup v1"

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

    def prefix(self) -> list[str]:
        """A command prefix that joins the cgroups (or sets the rlimit), then execs the rest."""
        steps = [f"echo $$ > {shlex.quote(str(group / 'cgroup.procs'))}" for group in self.groups]
        if self.memory and self.enforced.get("memory", "").startswith("RLIMIT"):
            steps.append(f"ulimit -d {max(1, self.memory // 1024)}")
        if not steps:
            return []
        return ["/bin/sh", "-c", " && ".join([*steps, 'exec "$@"']), "mlab-limits"]

    def close(self) -> None:
        """Remove the cgroups; they must be empty, so call this after the processes are dead."""
        for group in self.groups:
            try:
                os.rmdir(group)
            except OSError:
                pass
        self.groups = []

"""The CPU time a container's commands used, read where nothing running inside can change it:
the container's cgroup counter, every process of the container counted, reaped or not."""

from __future__ import annotations

from typing import Any

_CPU_FILES = ("cpuacct/cpuacct.usage", "cpu,cpuacct/cpuacct.usage", "cpu.stat")  # cgroup v1 (ns), v2 (usage_usec)
#: A shell script that prints the container's cgroup counter from inside (its cgroup file system is
#: read-only there); :func:`cgroup_cpu_seconds` reads what it prints.
READ_CPU = "cat " + " ".join(f"/sys/fs/cgroup/{name}" for name in _CPU_FILES) + " 2>/dev/null; true"


def cgroup_cpu_seconds(text: str) -> float | None:
    """CPU seconds from a cgroup's counter file: v1's cpuacct.usage (nanoseconds) or v2's cpu.stat."""
    for line in text.splitlines():
        words = line.split()
        if len(words) == 1 and words[0].isdigit():
            return int(words[0]) / 1e9
        if len(words) == 2 and words[0] == "usage_usec" and words[1].isdigit():
            return int(words[1]) / 1e6
    return None


def host_cgroup_cpu(pid: int) -> float | None:
    """The CPU counter of the cgroup process ``pid`` (the container's init) is in, read on this machine."""
    try:
        with open(f"/proc/{pid}/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        folders = [f"/sys/fs/cgroup/{c}" for c in controllers.split(",") if c in ("cpuacct", "cpu")] if controllers \
            else ["/sys/fs/cgroup"]
        for folder in folders:
            for name in ("cpuacct.usage", "cpu.stat"):
                try:
                    with open(f"{folder}{path}/{name}") as counter:
                        seconds = cgroup_cpu_seconds(counter.read())
                except OSError:
                    continue
                if seconds is not None:
                    return seconds
    return None


def stats_cpu_seconds(container: Any) -> float | None:
    """CPU seconds (user + system) the container's cgroup has used so far, from the daemon's
    stats (the cgroup's own counter: every process of the container, reaped or not). Read by the
    harness, outside the container: nothing running inside can change it (its cgroup file system
    is read-only there). None when the daemon does not say, or the container was restarted
    (the counter starts again at 0)."""
    from docker.errors import DockerException

    try:
        stats = container.stats(stream=False, one_shot=True)
        usage = stats["cpu_stats"]["cpu_usage"]["total_usage"]  # nanoseconds
    except (DockerException, KeyError, TypeError):
        return None
    return usage / 1e9 if isinstance(usage, int) and usage > 0 else None

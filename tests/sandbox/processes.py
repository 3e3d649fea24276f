"""Looking at processes from a test: whether one still runs, its /proc/PID/stat fields, and which
processes carry a tag in their command line."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

LINUX = sys.platform.startswith("linux")


def stat_fields(pid: int) -> list[int | bytes]:
    """The fields of /proc/PID/stat after the command name (state, ppid, pgrp, sid, ...; start
    time at index 19), numbers as ints."""
    with open(f"/proc/{pid}/stat", "rb") as handle:
        data = handle.read()
    return [int(field) if field.isdigit() else field for field in data[data.rfind(b")") + 2 :].split()]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (zombies nobody reaped yet count as dead)."""
    if LINUX:
        try:
            return stat_fields(pid)[0] not in (b"Z", b"X")
        except OSError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def tagged_processes(tag: str, wait_s: float = 2.0) -> list[int]:
    """Live processes whose command line holds ``tag``, after giving killed ones ``wait_s`` to go."""
    deadline = time.monotonic() + wait_s
    while True:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if tag.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(int(pid))
            except OSError:
                continue
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)

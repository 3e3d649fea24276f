"""Looking at processes from a test: whether one still runs, and its /proc/PID/stat fields."""

from __future__ import annotations

import os
import sys

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

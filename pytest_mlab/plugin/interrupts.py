"""Ctrl-C under pytest-xdist: the controller passes it on to the runs its workers carry out and
waits for them to grade their final workspaces, before xdist stops the workers.

Left to itself, xdist asks each worker to exit, interrupts a busy one 5 s later and kills it 5 s
after that: a run Ctrl-C reached only through the controller (or whose grading takes longer than
that) would end without a result. Waiting is bounded by :data:`PATIENCE_S` (the runner's bound
for grading after Ctrl-C, its grace, and time for the final snapshot); a second Ctrl-C stops the
wait and passes it on at once.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from pytest_mlab.env.ctrl_c import INTERRUPTED_GRADING_S
from pytest_mlab.env.deadline import GRACE_FRACTION
from pytest_mlab.trace.progress import GRADING, INTERRUPTED, Status, read_statuses

SNAPSHOT_MARGIN_S = 30.0  # for the final snapshot and the result record, around grading
# runs in these phases are waited for, never interrupted: Ctrl-C reached them, or they are grading already
LEFT_TO_FINISH = frozenset({INTERRUPTED, GRADING})
PATIENCE_S = INTERRUPTED_GRADING_S * (1 + GRACE_FRACTION) + SNAPSHOT_MARGIN_S
POLL_S = 0.1


class CtrlCRelay:
    """Registered on an xdist controller; runs before xdist's own pytest_sessionfinish stops the workers."""

    def __init__(self, out_dir: Path, session: str) -> None:
        self.out_dir = out_dir
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.exitstatus != pytest.ExitCode.INTERRUPTED:
            return
        running = _running(self.out_dir, self.session)
        terminal = session.config.pluginmanager.get_plugin("terminalreporter")
        if running and terminal is not None:
            terminal.write_line(f"pytest-mlab: Ctrl-C: {len(running)} run(s) grade their final workspace (up to "
                                f"{PATIENCE_S:.0f} s); Ctrl-C again to stop at once", yellow=True)
        try:
            settle(self.out_dir, self.session, time.monotonic() + PATIENCE_S)
        except KeyboardInterrupt:  # a second Ctrl-C: every run still going stops now
            for status in _running(self.out_dir, self.session):
                _interrupt(status.pid)


def settle(out_dir: Path, session: str, until: float) -> None:
    """Interrupt each run of ``session`` still acting (not those Ctrl-C already reached, nor those
    grading), then wait until none is left or ``until`` (a ``time.monotonic()`` value) passes."""
    told: set[tuple[int, str]] = set()
    while True:
        running = _running(out_dir, session)
        if not running or time.monotonic() >= until:
            return
        for status in running:
            if status.phase not in LEFT_TO_FINISH and (status.pid, status.run_id) not in told:
                told.add((status.pid, status.run_id))
                _interrupt(status.pid)
        time.sleep(POLL_S)


def _running(out_dir: Path, session: str) -> list[Status]:
    """This session's runs in progress in another live process (a dead worker's file stays behind)."""
    return [status for status in read_statuses(out_dir, session)
            if status.pid and status.pid != os.getpid() and _alive(status.pid)]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs: a worker killed by SIGKILL stays a zombie until xdist reaps it."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def _interrupt(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGINT)
    except OSError:  # it ended meanwhile
        pass

"""The process tree of one command on its own: what it records while the command runs, what it
kills, and the waiting and reaping around it (Linux /proc)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from pytest_mlab.sandbox.process_tree import ProcessTree, kill_known, pipe_writers, reap, wait_for_exit
from tests.sandbox.processes import alive, stat_fields

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process tracking reads /proc")

# a child that leaves its parent's session at once and prints its pid; the parent then waits
SETSID_CHILD = ("import subprocess, sys, time\n"
                "child = subprocess.Popen(['sleep', '60'], start_new_session=True, stdout=subprocess.DEVNULL)\n"
                "print(child.pid, flush=True)\n"
                "time.sleep(60)\n")


def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def start(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)


def test_a_child_in_another_session_is_killed_once_seen_while_its_parent_lived():
    proc = start(SETSID_CHILD)
    tree = ProcessTree(proc.pid)
    try:
        child = int(proc.stdout.readline())
        tree.track()
        assert child in tree.known
    finally:
        tree.kill()
        proc.wait()
        proc.stdout.close()
    assert gone(proc.pid) and gone(child)


def test_without_a_look_while_it_ran_a_child_in_another_session_is_missed_but_a_pipe_writer_is_found():
    proc = subprocess.Popen(["sh", "-c", "setsid sleep 60 & echo $!"], stdout=subprocess.PIPE, start_new_session=True)
    child = int(proc.stdout.readline())
    proc.wait()
    deadline = time.monotonic() + 5
    while stat_fields(child)[3] != child and time.monotonic() < deadline:  # until it has left the session
        time.sleep(0.01)
    tree = ProcessTree(proc.pid)
    try:
        tree.kill()
        assert alive(child)  # the documented escape: parent gone before any look
        holders = pipe_writers({os.fstat(proc.stdout.fileno()).st_ino})
        assert holders == {child}
        tree.kill(extra=holders)
        assert gone(child)
    finally:
        kill_known({child: _start_ticks(child)} if alive(child) else {})
        proc.stdout.close()


def _start_ticks(pid: int) -> int:
    return stat_fields(pid)[19]


def test_kill_known_spares_a_process_that_only_reuses_a_recorded_pid():
    proc = subprocess.Popen(["sleep", "60"])
    try:
        kill_known({proc.pid: _start_ticks(proc.pid) + 1})  # same pid, another start time
        assert alive(proc.pid)
        kill_known({proc.pid: _start_ticks(proc.pid)})
        assert proc.wait(5) == -9
    finally:
        proc.kill()
        proc.wait()


def test_waiting_looks_at_the_tree_until_the_deadline_and_reaping_counts_cpu():
    looks = []
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        started = time.monotonic()
        assert wait_for_exit(sleeper, started + 0.5, lambda: looks.append(1)) is False
        assert 0.4 < time.monotonic() - started < 3 and looks
    finally:
        ProcessTree(sleeper.pid).kill()
        reap(sleeper)
    assert sleeper.returncode == -9
    burner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.3\n"
                               "while time.process_time() < end: pass"])
    assert wait_for_exit(burner, time.monotonic() + 30, lambda: None) is True
    cpu = reap(burner)
    assert burner.returncode == 0 and cpu is not None and cpu >= 0.25

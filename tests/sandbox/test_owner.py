"""Leftovers are named for the process that made them, so clean-up can tell a dead owner's from
a live one's, even when a pid has been reused."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
from pathlib import Path

from pytest_mlab.sandbox.owner import (name_owner_gone, owned_prefix, owner_gone, owner_label, pid_namespace,
                                       start_ticks)
from tests.helpers import REPO


def exited_process() -> tuple[int, str]:
    proc = subprocess.Popen(["sleep", "30"])
    ticks = start_ticks(proc.pid)
    proc.kill()
    proc.wait()
    return proc.pid, ticks


def test_owned_names_carry_pid_start_time_and_pid_namespace():
    assert owned_prefix("ws") == f"mlab-ws-{os.getpid()}-{start_ticks(os.getpid())}-{pid_namespace()}-"
    folder = Path(tempfile.mkdtemp(prefix=owned_prefix("call")))
    try:
        assert folder.name.startswith(owned_prefix("call")) and folder.is_dir()
        assert not name_owner_gone(folder.name)
    finally:
        folder.rmdir()


def test_a_dead_owner_is_gone_and_a_reused_pid_does_not_make_it_alive():
    pid, ticks = exited_process()
    namespace = pid_namespace()
    assert name_owner_gone(f"mlab-ws-{pid}-{ticks}-{namespace}-abcd")
    # our own pid with another start time: a process that once had our pid, long gone
    assert name_owner_gone(f"mlab-home-{os.getpid()}-{int(start_ticks(os.getpid())) - 1}-{namespace}-abcd")
    assert not name_owner_gone(f"{owned_prefix('home')}abcd")


def test_an_owner_in_another_pid_namespace_is_never_judged_from_here():
    """A grader in a pid namespace of its own has pids that mean nothing out here: keep its folders."""
    pid, ticks = exited_process()
    assert not name_owner_gone(f"mlab-ws-{pid}-{ticks}-{int(pid_namespace()) + 1}-abcd")


def test_names_without_an_owner_are_never_judged():
    for name in ("mlab-ws-k2j3h4", "mlab-toy-mini-crasher-s0--f45f81e3", "pytest-of-root", "mlab-ws-12-ab-x",
                 "mlab-ws-12-34-x"):
        assert not name_owner_gone(name)


def test_owner_labels_name_the_host_too():
    assert owner_label() == f"{socket.gethostname()}:{os.getpid()}:{start_ticks(os.getpid())}"
    assert not owner_gone(owner_label())
    pid, ticks = exited_process()
    assert owner_gone(f"{socket.gethostname()}:{pid}:{ticks}")
    assert not owner_gone(f"another-host:{pid}:{ticks}")  # undecidable elsewhere: kept


def test_every_mlab_temp_folder_of_the_package_is_named_for_its_owner():
    """A temp folder named without an owner could never be swept after its creator is killed."""
    unowned = re.compile(r"""prefix\s*=\s*f?["']mlab-""")
    offenders = [f"{path.relative_to(REPO)}:{number}"
                 for path in sorted((REPO / "pytest_mlab").rglob("*.py"))
                 for number, line in enumerate(path.read_text().splitlines(), 1) if unowned.search(line)]
    assert offenders == []

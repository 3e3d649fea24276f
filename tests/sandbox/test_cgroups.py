"""The cgroups behind every local and bwrap sandbox: default limits, owner-named groups, the
rlimit fall-back, CPU accounting per command (escaped processes included) and cgroup v2."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.sandbox import cgroups
from pytest_mlab.sandbox.cgroups import Limits
from pytest_mlab.sandbox.owner import name_owner_gone, owned_prefix
from pytest_mlab.sandbox.registry import sandbox_unavailable
from pytest_mlab.spec.models import DEFAULT_MEMORY, DEFAULT_PIDS

MiB = 1 << 20


def test_every_sandbox_gets_the_default_limits_unless_told_otherwise():
    defaults = Limits.for_sandbox(SandboxOptions(label="defaults"))
    chosen = Limits.for_sandbox(SandboxOptions(memory=64 * MiB, pids=32, label="chosen"))
    try:
        assert (defaults.memory, defaults.pids) == (DEFAULT_MEMORY, DEFAULT_PIDS) == (4 << 30, 512)
        assert (chosen.memory, chosen.pids) == (64 * MiB, 32)
    finally:
        defaults.close()
        chosen.close()


def test_groups_are_named_for_their_owner_and_removed_at_close():
    limits = Limits(64 * MiB, 32, "house-price[mini-baseline-s0]")
    if not limits.groups:
        pytest.skip(f"no writable cgroup hierarchy here: {limits.enforced}")
    groups = list(limits.groups)
    assert all(group.name.startswith(f"{owned_prefix('sandbox')}house-price-mini-baseline-s0--") for group in groups)
    assert not any(name_owner_gone(group.name) for group in groups)
    limits.close()
    assert limits.groups == [] and not any(group.exists() for group in groups)


def test_without_a_writable_cgroup_memory_falls_back_to_rlimit_data_and_pids_are_not_limited(monkeypatch):
    monkeypatch.setattr(cgroups, "_bases", lambda: [])
    with open_sandbox("local", options=SandboxOptions(memory=256 * MiB, pids=8, label="rlimit")) as sandbox:
        assert sandbox.limits.enforced == {"memory": "RLIMIT_DATA (per process)"}
        assert f"ulimit -d {256 * 1024}" in sandbox.limits.prefix()[2]
        result = sandbox.exec([sandbox.python, "-c", "bytearray(1 << 30); print('survived')"], timeout=60,
                              output_limit=10_000)
    assert "MemoryError" in result.stderr and "survived" not in result.stdout


# A detached grandchild burns CPU the command's own rusage never sees (nobody waits for it).
BURN = """import os, sys, time
done = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        while time.process_time() < 0.4:
            pass
        open(done, 'w').close()
    os._exit(0)
while not os.path.exists(done):
    time.sleep(0.02)
"""


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_each_command_gets_its_own_cpu_time_from_the_cgroup_escaped_processes_included(kind):
    reason = sandbox_unavailable(kind)
    if reason is not None:
        pytest.skip(f"the {kind} sandbox cannot run here: {reason}")
    with open_sandbox(kind, options=SandboxOptions(label="cpu")) as sandbox:
        if not sandbox.limits.enforced.get("cpu"):
            pytest.skip(f"no cgroup accounts for CPU time here: {sandbox.limits.enforced}")
        sandbox.write("burn.py", BURN.encode())
        burnt = sandbox.exec([sandbox.python, "burn.py", "done.flag"], timeout=60, output_limit=10_000)
        idle = sandbox.exec(["/bin/true"], timeout=60, output_limit=10_000)
    assert burnt.returncode == 0, burnt.stderr
    assert burnt.cpu_time >= 0.4
    assert idle.cpu_time is not None and idle.cpu_time < burnt.cpu_time - 0.3  # not the first command's again


def _unified_root() -> Path:
    """A cgroup v2 hierarchy we may write to: the host's, or the v2 half of a hybrid host."""
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        if (root / "cgroup.controllers").exists() and os.access(root / "cgroup.procs", os.W_OK):
            return root
    pytest.skip("no writable cgroup v2 hierarchy here")


def test_cgroup_v2_kills_everything_in_the_group_and_accounts_cpu(monkeypatch):
    monkeypatch.setattr(cgroups, "_ROOT", _unified_root())
    limits = Limits(None, None, "v2")
    if not limits.groups:
        pytest.skip("cannot create a group in the cgroup v2 hierarchy here")
    assert limits.enforced.get("cpu") == "cgroup v2"
    tag = f"v2-{uuid.uuid4().hex}"
    script = (f"import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\n"
              f"while time.process_time() < 0.2:\n    pass\n# {tag}\n")
    path = Path(limits.groups[0])
    try:
        proc = subprocess.Popen([*limits.prefix(), "python3", "-c", script, tag])
        assert proc.wait(timeout=60) == 0
        assert cgroups._members(path), "the detached child is still in the group"
        assert limits.cpu_seconds() >= 0.2
        limits.kill()
        assert cgroups._members(path) == []
    finally:
        limits.close()
    assert not path.exists()

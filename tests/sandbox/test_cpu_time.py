"""Every backend measures the CPU time of a command from outside its processes
(``ExecResult.cpu_time``): what timed grading relies on. Nothing the command does to its own
clocks changes the count."""

from __future__ import annotations

import textwrap

import pytest

from pytest_mlab.sandbox import SandboxOptions, open_sandbox

BURN_S = 0.6

# Burns BURN_S of its own CPU time (by the real clock, read before anything is patched).
BURN = textwrap.dedent(f"""
    import time
    _clock = time.process_time
    start = _clock()
    while _clock() - start < {BURN_S}:
        pass
""")

# Replaces every clock Python offers, then burns as much CPU as BURN, in itself and in a child it
# waits for, and reports a made-up time.
PATCHED = textwrap.dedent(f"""
    import os, subprocess, sys, time
    real = time.process_time
    for name in ("process_time", "perf_counter", "monotonic", "time", "thread_time",
                 "process_time_ns", "perf_counter_ns", "monotonic_ns", "time_ns"):
        setattr(time, name, lambda *args: 0)
    import resource
    resource.getrusage = lambda *args: None
    start = real()
    while real() - start < {BURN_S / 2}:
        pass
    subprocess.run([sys.executable, "-c", {BURN.replace(str(BURN_S), str(BURN_S / 2))!r}], check=True)
    print("elapsed", time.perf_counter(), time.process_time())
""")


@pytest.fixture
def sandbox(kind):
    box = open_sandbox(kind, options=SandboxOptions(label=f"cpu-{kind}"))
    yield box
    box.close()


def test_a_busy_loop_is_counted(sandbox):
    result = sandbox.exec([sandbox.python, "-c", BURN], timeout=60, output_limit=10_000)
    assert result.returncode == 0, result.stderr
    assert result.cpu_time is not None and result.cpu_time >= BURN_S * 0.9


def test_an_idle_command_is_not_charged_for_its_wall_time(sandbox):
    result = sandbox.exec([sandbox.python, "-c", "import time; time.sleep(1.5)"], timeout=60, output_limit=10_000)
    assert result.returncode == 0, result.stderr
    assert result.cpu_time is not None and result.cpu_time < 1.0


def test_patching_its_own_clocks_does_not_lower_it(sandbox):
    result = sandbox.exec([sandbox.python, "-c", PATCHED], timeout=60, output_limit=10_000)
    assert result.returncode == 0, result.stderr
    assert "elapsed 0 0" in result.stdout  # the command's own view of time is gone
    assert result.cpu_time is not None and result.cpu_time >= BURN_S * 0.9


def test_each_command_is_counted_on_its_own(sandbox):
    sandbox.exec([sandbox.python, "-c", BURN], timeout=60, output_limit=10_000)
    idle = sandbox.exec([sandbox.python, "-c", "pass"], timeout=60, output_limit=10_000)
    assert idle.cpu_time is not None and idle.cpu_time < BURN_S / 2


@pytest.mark.parametrize("program", [BURN, PATCHED])
def test_without_a_cgroup_the_local_backends_count_the_reaped_process_tree(monkeypatch, program):
    """Where no cgroup accounts for CPU time, the kernel's count at reaping is used (the command
    and every descendant that was waited for)."""
    from pytest_mlab.sandbox.cgroups import Limits

    monkeypatch.setattr(Limits, "cpu_seconds", lambda self: None)
    with open_sandbox("local") as box:
        result = box.exec([box.python, "-c", program], timeout=60, output_limit=10_000)
    assert result.returncode == 0, result.stderr
    assert result.cpu_time is not None and result.cpu_time >= BURN_S * 0.9


def test_without_a_cgroup_bwrap_reports_no_cpu_time_rather_than_a_wrong_one(monkeypatch):
    """bwrap's pid 1 reaps the command but is never reaped by the process the harness waits for:
    the kernel's count at reaping misses the whole sandbox. Only a cgroup can count there."""
    from pytest_mlab.sandbox.bwrap import BwrapSandbox
    from pytest_mlab.sandbox.cgroups import Limits
    from pytest_mlab.sandbox.registry import sandbox_unavailable

    if sandbox_unavailable("bwrap"):
        pytest.skip(f"the bwrap sandbox cannot run here: {sandbox_unavailable('bwrap')}")
    monkeypatch.setattr(Limits, "cpu_seconds", lambda self: None)
    with open_sandbox("bwrap") as box:
        result = box.exec([box.python, "-c", BURN], timeout=60, output_limit=10_000)
    assert result.returncode == 0, result.stderr
    assert result.cpu_time is None and not BwrapSandbox.reaping_counts_cpu

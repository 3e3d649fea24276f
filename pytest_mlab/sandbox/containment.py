"""Run trusted task code (graders, data recipes) so that everything it starts can be ended as one.

Task code sees the whole host (it needs the data cache, its assets and, for downloads, the
network), but what it starts must not outlive it: a grader that imports or runs an agent's code
could otherwise leave a double-forked ``setsid`` child behind, which a process-group kill misses.
The strongest containment the machine allows is used:

1. ``pid namespace``: bwrap with the host's file system bound as it is (``--dev-bind / /``), the
   network and everything else shared, but a pid namespace of its own and a /proc that shows only
   it. When the command's first process ends, or the harness dies, the kernel kills every process
   in the namespace; nothing can leave it.
2. ``cgroup``: the command joins a fresh cgroup (:mod:`.cgroups`), and everything in the group is
   killed afterwards, however it detached itself.
3. ``process tree``: the process-tree kill of :mod:`.process_tree` (session, group and
   descendants seen while it ran). A process that calls ``setsid`` and loses its parent between
   two looks at ``/proc`` escapes it; this is the only mode where something can survive.
"""

from __future__ import annotations

import functools
import math
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from pytest_mlab.sandbox.cgroups import Limits
from pytest_mlab.sandbox.process_tree import ProcessTree, wait_for_exit

PID_NAMESPACE = "pid namespace"
CGROUP = "cgroup"
PROCESS_TREE = "process tree"


def _pid_namespace_prefix() -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    return [bwrap, "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--die-with-parent", "--"]


@functools.lru_cache(maxsize=None)
def pid_namespace_works() -> bool:
    """Whether bwrap can give task code a pid namespace of its own here (probed once per process)."""
    if shutil.which("bwrap") is None:
        return False
    try:
        probe = subprocess.run([*_pid_namespace_prefix(), sys.executable, "-c", "import os; print(os.getpid())"],
                               capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0 and probe.stdout.strip() in (b"1", b"2")


def cgroup_works() -> bool:
    """Whether this process may create cgroups."""
    group = Limits(None, None, "probe", kind="task")
    usable = bool(group.groups)
    group.close()
    return usable


@functools.lru_cache(maxsize=None)
def containment() -> str:
    """How task code is contained on this machine: the strongest mode that works."""
    if pid_namespace_works():
        return PID_NAMESPACE
    return CGROUP if cgroup_works() else PROCESS_TREE


def run_contained(argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float | None,
                  output: IO[bytes] | None) -> int | None:
    """Run ``argv`` contained; its output (stdout and stderr) goes to ``output``, or to this
    process's own when None. Returns the exit code, or None when ``timeout`` passed first. When
    this returns or raises (Ctrl-C), every process the command started is dead."""
    mode = containment()
    group = Limits(None, None, "task-code", kind="task") if mode == CGROUP else None
    prefix = _pid_namespace_prefix() if mode == PID_NAMESPACE else group.prefix() if group else []
    deadline = math.inf if timeout is None else time.monotonic() + max(0.0, timeout)
    proc = subprocess.Popen([*prefix, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=output,
                            stderr=subprocess.STDOUT if output is not None else None, start_new_session=True)
    tree = ProcessTree(proc.pid)
    exited = False
    try:
        exited = wait_for_exit(proc, deadline, tree.track if mode == PROCESS_TREE else lambda: None)
    finally:
        tree.kill()
        if group is not None:
            group.close()
        proc.wait()
    return proc.returncode if exited else None

"""Run trusted task code (graders, data recipes) so that everything it starts can be ended as one.

Task code sees the whole host (it needs the data cache, its assets and, for downloads, the
network), but what it starts must not outlive it: a grader that imports or runs an agent's code
could otherwise leave a double-forked ``setsid`` child behind, which a process-group kill misses.
The strongest containment the machine allows is used:

1. ``pid namespace``: bwrap with the host's file system bound as it is (``--dev-bind / /``), the
   network and everything else shared, but a pid namespace of its own and a /proc that shows only
   it. When the command's first process ends, or the harness dies, the kernel kills every process
   in the namespace; nothing can leave it. bwrap copies the host's mount table for that, and
   loses a race with anything that mounts and unmounts meanwhile under a shared mount (a docker
   daemon creating containers, bubblewrap issue #650): it fails before the command starts.
   Only such a start is tried again (:func:`run_contained`).
2. ``cgroup``: the command joins a fresh cgroup (:mod:`.cgroups`), and everything in the group is
   killed afterwards, however it detached itself.
3. ``process tree``: the process-tree kill of :mod:`.process_tree` (session, group and
   descendants seen while it ran). A process that calls ``setsid`` and loses its parent between
   two looks at ``/proc`` escapes it; this is the only mode where something can survive.
"""

from __future__ import annotations

import functools
import math
import os
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


#: starts of a contained command (bwrap's set-up, before the command runs) before giving up
START_ATTEMPTS = 6
_RETRY_PAUSE_S = 0.05  # times the attempt number: a burst of container starts has time to pass
# the command's first act inside the sandbox: say on the fd named by argv[1] that it started, close
# that fd, and become the command (Python, not sh: dash takes no fd number above 9)
_ANNOUNCE_START = ("import os, sys; fd = int(sys.argv[1]); os.write(fd, b'.'); os.close(fd); "
                   "os.execvp(sys.argv[2], sys.argv[2:])")


def _pid_namespace_prefix() -> list[str]:
    bwrap = shutil.which("bwrap") or "bwrap"
    return [bwrap, "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid", "--die-with-parent", "--"]


@functools.lru_cache(maxsize=None)
def pid_namespace_works() -> bool:
    """Whether bwrap can give task code a pid namespace of its own here (probed once per process;
    a failed set-up is tried again, as for a real command, so one lost race does not downgrade
    the whole session to a weaker mode)."""
    if shutil.which("bwrap") is None:
        return False
    for attempt in range(1, START_ATTEMPTS + 1):
        try:
            probe = subprocess.run([*_pid_namespace_prefix(), sys.executable, "-c", "import os; print(os.getpid())"],
                                   capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if probe.returncode == 0 and probe.stdout.strip() in (b"1", b"2"):
            return True
        if probe.stdout or not probe.stderr.startswith(b"bwrap:"):
            return False  # Python ran and said something else, or bwrap is not what failed
        time.sleep(_RETRY_PAUSE_S * attempt)
    return False


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
    deadline = math.inf if timeout is None else time.monotonic() + max(0.0, timeout)
    if mode != PID_NAMESPACE:
        group = Limits(None, None, "task-code", kind="task") if mode == CGROUP else None
        try:
            return _run_to_end([*(group.prefix() if group else []), *argv], mode, cwd=cwd, env=env,
                               deadline=deadline, output=output)
        finally:
            if group is not None:
                group.close()
    rewind_to = output.tell() if output is not None and output.seekable() else None
    attempt = 1
    while True:
        code, started = _run_announced(_pid_namespace_prefix(), argv, mode, cwd=cwd, env=env, deadline=deadline,
                                       output=output)
        if started or code is None or attempt == START_ATTEMPTS:
            return code
        # bwrap failed before the command existed: nothing ran, so running it now is its first run
        if rewind_to is not None:
            output.seek(rewind_to)
            output.truncate()
        time.sleep(_RETRY_PAUSE_S * attempt)
        attempt += 1


def _run_announced(prefix: list[str], argv: list[str], mode: str, *, cwd: Path, env: dict[str, str],
                   deadline: float, output: IO[bytes] | None) -> tuple[int | None, bool]:
    """One start of ``prefix + argv``: its exit code (None past ``deadline``) and whether the
    command itself started. The command's first act is to say so on a pipe that only the harness
    holds otherwise: nothing the command prints or returns can fake it."""
    read_end, write_end = os.pipe()
    try:
        announced = [sys.executable, "-I", "-S", "-c", _ANNOUNCE_START, str(write_end), *argv]
        code = _run_to_end([*prefix, *announced], mode, cwd=cwd, env=env, deadline=deadline, output=output,
                           passed_fd=write_end)
        os.set_blocking(read_end, False)
        try:
            started = os.read(read_end, 1) == b"."
        except BlockingIOError:  # nothing written, though a writer lives on: it never started
            started = False
        return code, started
    finally:
        os.close(read_end)


def _run_to_end(command: list[str], mode: str, *, cwd: Path, env: dict[str, str], deadline: float,
                output: IO[bytes] | None, passed_fd: int | None = None) -> int | None:
    """Run ``command`` until it ends or ``deadline`` passes; returns its exit code, or None."""
    try:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                stderr=subprocess.STDOUT if output is not None else None, start_new_session=True,
                                pass_fds=() if passed_fd is None else (passed_fd,))
    finally:
        if passed_fd is not None:
            os.close(passed_fd)  # the command holds it now; the harness keeps only the read end
    tree = ProcessTree(proc.pid)
    exited = False
    try:
        exited = wait_for_exit(proc, deadline, tree.track if mode == PROCESS_TREE else lambda: None)
    finally:
        tree.kill()
        proc.wait()
    return proc.returncode if exited else None

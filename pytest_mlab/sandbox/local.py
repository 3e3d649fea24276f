"""The local backend: the workspace is a host directory and commands run as host processes.

This backend is for development and trusted agents. It filters the environment, confines every
path the harness handles to the workspace (:mod:`.workspace`) and kills what a command leaves
running, but the code the agent runs still has the harness user's rights on the whole machine: it
can read any file the user can, by absolute path, and use the network. Use the docker or bwrap
backend for real isolation.

Limits: every command runs in the sandbox's cgroups where the cgroup file system is writable
(:mod:`.cgroups`; root on cgroup v1, or a delegated v2 subtree): memory (default 4 GiB) and
process count (default 512) for all the sandbox's processes together. Elsewhere memory is limited
per process by ``RLIMIT_DATA`` and the process count is not limited.

Killing a command's processes: where the sandbox has a cgroup, everything in it is killed after
each command, whatever it did to detach itself (short of moving itself to another cgroup, which
code running as root can do here), and the command's CPU time is the cgroup's. Without a cgroup
it is best effort on Linux (elsewhere only the process group is killed): the command's process
tree, as :mod:`.process_tree` finds it, is killed when the command ends or times out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
import weakref
from dataclasses import replace
from pathlib import Path
from typing import IO

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.base import ExecResult, Sandbox, SandboxOptions, memory_limit_notice
from pytest_mlab.sandbox.capture import READ_GRACE_S, Output, drain, feed_stdin, join_all, start_thread
from pytest_mlab.sandbox.cgroups import Limits
from pytest_mlab.sandbox.environ import clean_environment
from pytest_mlab.sandbox.gpus import cuda_environment
from pytest_mlab.sandbox.owner import owned_prefix
from pytest_mlab.sandbox.process_tree import ProcessTree, kill_known, pipe_writers, reap, wait_for_exit
from pytest_mlab.sandbox.standby import Standby
from pytest_mlab.sandbox.threads import thread_environment
from pytest_mlab.sandbox.workspace import HostWorkspace, OnHostWorkspace, remove_tree
from pytest_mlab.task_runtime.choice import task_python

_EOF_WAIT_S = 0.5  # how long killed writers get to release the pipes before we search /proc


def _nothing() -> None:
    return None


def _release(leftovers: dict[int, int], home: Path) -> None:
    """Kill what earlier commands left running and delete the sandbox's private home."""
    kill_known(leftovers)
    remove_tree(home)


class LocalSandbox(OnHostWorkspace, Sandbox):
    """Workspace = host directory; commands = host processes with a filtered environment."""

    name = "local"
    #: Whether what a command leaves running must be found through /proc (process_tree.py): several
    #: scans of every process on the machine per command. A backend whose commands run in a pid
    #: namespace of their own, which the kernel empties when its first process ends, says False.
    tracks_process_tree = True
    #: Whether the kernel's count at reaping the command (``reap``) covers the CPU time of what
    #: it ran. True for a plain process tree. A backend that wraps commands must say so itself
    #: (subclasses default to False, see ``__init_subclass__``): bwrap's pid 1, which reaps the
    #: command, is never reaped by the process the harness waits for, so its count is lost. Where
    #: this is False and no cgroup counts, ``cpu_time`` is None and timed grading says so.
    reaping_counts_cpu = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.reaping_counts_cpu = bool(cls.__dict__.get("reaping_counts_cpu", False))

    def __init__(
        self,
        workspace: Path | None = None,
        *,
        base_env: dict[str, str] | None = None,
        options: SandboxOptions | None = None,
    ) -> None:
        self.options = options or SandboxOptions()
        self.files = HostWorkspace(workspace, sandbox=self.name)
        self._home = Path(tempfile.mkdtemp(prefix=owned_prefix("home"))).resolve()
        self._tmp = self._home / "tmp"
        self._tmp.mkdir()
        self._base_env = dict(base_env or {})
        self._leftovers: dict[int, int] = {}
        self._limits: Limits | None = None  # made by the first command
        self._standby: Standby | None = None  # the next command's shell, already in the cgroups
        self._expecting_commands = False  # an agent's run: keep a shell waiting (expect_commands)
        # Also runs if the sandbox is garbage-collected or the interpreter exits unclosed, so
        # the home and stray processes do not outlive a caller that forgot ``close`` (the
        # workspace removes itself the same way).
        self._release = weakref.finalize(self, _release, self._leftovers, self._home)

    @property
    def limits(self) -> Limits:
        """The cgroups (or rlimits) every command of this sandbox runs under, made on first use."""
        if self._limits is None:
            self._limits = Limits.for_sandbox(self.options)
            weakref.finalize(self, self._limits.close)
        return self._limits

    @property
    def python(self) -> str:
        """The interpreter agents' scripts run with: the task runtime's (task_runtime/choice.py),
        not the harness's, so an agent cannot import pytest-mlab, litellm or the docker SDK."""
        return task_python()

    @property
    def home(self) -> Path:
        """The private HOME executed code sees (outside the workspace, removed at close)."""
        return self._home

    # -- commands ------------------------------------------------------------------------------

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        """An allow-list, never the harness environment: API keys and the like stay out.
        ``base_env`` and then ``env`` override the defaults (the item's thread share, see
        :mod:`.threads`, among them); nothing overrides the item's GPUs."""
        return clean_environment({**thread_environment(), "HOME": str(self._home), "TMPDIR": str(self._tmp),
                                  **self._base_env, **(env or {}),
                                  **cuda_environment(self.options.gpus)})

    def exec(
        self,
        argv: list[str],
        *,
        timeout: float,
        output_limit: int,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        self.files.check_open()
        if not argv:
            raise SandboxError("exec needs a command to run, got an empty argv")
        environment = self._environment(env)
        if not self._runnable(argv[0], environment):
            raise SandboxError(f"could not start {argv[0]!r} in the {self.name} sandbox: no such program")
        limits = self.limits
        cpu_before, oom_before = limits.cpu_seconds(), limits.oom_kills()
        started = time.monotonic()
        proc = self._from_standby(argv, environment, stdin)
        if proc is None:
            try:
                proc = subprocess.Popen(
                    [*limits.prefix(), *argv],
                    cwd=self.files.root,
                    env=environment,
                    stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise SandboxError(f"could not start {argv[0]!r} in the local sandbox: {exc}") from exc
        result = self._account(self._supervise(proc, started, timeout, output_limit, stdin), cpu_before, oom_before)
        self._start_standby()
        return result

    def expect_commands(self) -> None:
        """From now on, a shell waits for each next command (standby.py); sandboxes that run one
        command and close (a measurement, a grading) never pay for one."""
        self._expecting_commands = True
        self._start_standby()

    def _from_standby(self, argv: list[str], environment: dict[str, str],
                      stdin: str | None) -> subprocess.Popen | None:  # type: ignore[type-arg]
        """The command started in the waiting standby shell (standby.py), or None where there is
        none or it cannot run this command (the shell is then ended: the cgroups are emptied after
        every command, and a new one is started after this command)."""
        standby = self._standby
        if standby is None:
            return None
        if not standby.fits(argv, environment, stdin):
            self._discard_standby()
            return None
        self._standby = None
        return standby.run(argv)

    def _start_standby(self) -> None:
        """Start the next command's shell, which joins the cgroups while the harness and the agent
        go on; only once commands are expected, where joining costs something (there are limits
        to set) and the previous shell was used."""
        if not self._expecting_commands or self._standby is not None or self.files.closed:
            return
        steps = self.limits.shell_steps()
        if not steps:
            return
        try:
            self._standby = Standby.start(steps, self.files.root, self._environment(None))
        except OSError:  # out of processes, say: the next command starts the usual way
            self._standby = None

    def _runnable(self, program: str, environment: dict[str, str]) -> bool:
        """Whether ``program`` names an executable, as the command's ``exec`` will look it up
        (the limits prefix would otherwise turn a missing program into a shell error)."""
        if "/" in program:
            return os.access(self.files.root / program, os.X_OK)
        return shutil.which(program, path=environment.get("PATH", os.defpath)) is not None

    def _account(self, result: ExecResult, cpu_before: float | None, oom_before: int) -> ExecResult:
        """Kill whatever escaped the process tree but not the cgroup, then report from the cgroup:
        its CPU time (which counts escaped and unreaped processes too) and memory-limit kills."""
        limits = self.limits
        limits.kill()
        cpu_after = limits.cpu_seconds()
        if cpu_before is not None and cpu_after is not None:
            # the larger of the two: the cgroup also counts escaped processes, rusage also counts a
            # process that moved itself out of the cgroup (possible for root) but was reaped
            counted = max(0.0, cpu_after - cpu_before)
            result = replace(result, cpu_time=max(counted, result.cpu_time or 0.0))
        if limits.oom_kills() > oom_before:
            result = replace(result, stderr=result.stderr + memory_limit_notice(limits.memory or 0))
        return result

    def _supervise(
        self,
        proc: subprocess.Popen,  # type: ignore[type-arg]
        started: float,
        timeout: float,
        output_limit: int,
        stdin: str | None,
    ) -> ExecResult:
        """Collect output, enforce the timeout, then kill whatever the command left behind."""
        assert proc.stdout is not None and proc.stderr is not None
        tree = ProcessTree(proc.pid)
        pipes = (proc.stdout, proc.stderr)
        output = Output(output_limit)
        stop = threading.Event()
        readers = [start_thread(drain, pipe.fileno(), buffer, stop)
                   for pipe, buffer in zip(pipes, (output.stdout, output.stderr))]
        feeder = None
        if stdin is not None:
            assert proc.stdin is not None
            feeder = start_thread(feed_stdin, stdin, proc.stdin.write, proc.stdin.close)
        exited = False
        cpu_time: float | None = None
        try:
            exited = wait_for_exit(proc, started + max(0.0, timeout), tree.track if self.tracks_process_tree
                                   else _nothing)
        finally:
            if self.tracks_process_tree:
                tree.kill()
            else:
                tree.kill_group()
            cpu_time = reap(proc)
            if not self.reaping_counts_cpu:
                cpu_time = None
            self._release_pipes(tree, pipes, readers, stop)
            if feeder is not None:
                feeder.join(READ_GRACE_S)
            self._leftovers.update(tree.known)
        return ExecResult(
            returncode=proc.returncode if exited else None,
            stdout=output.stdout.text(),
            stderr=output.stderr.text(),
            timed_out=not exited,
            duration=time.monotonic() - started,
            truncated_bytes=output.truncated_bytes,
            cpu_time=cpu_time,
        )

    @staticmethod
    def _release_pipes(
        tree: ProcessTree,
        pipes: tuple[IO[bytes], IO[bytes]],
        readers: list[threading.Thread],
        stop: threading.Event,
    ) -> None:
        """Let readers reach EOF; if something still holds a pipe, kill it and stop reading."""
        if not join_all(readers, _EOF_WAIT_S):
            inodes = {os.fstat(pipe.fileno()).st_ino for pipe in pipes}
            tree.kill(extra=pipe_writers(inodes))
        stop.set()
        join_all(readers, READ_GRACE_S + 2.0)
        for pipe in pipes:
            pipe.close()

    # -- lifetime ------------------------------------------------------------------------------

    def _discard_standby(self) -> None:
        standby, self._standby = self._standby, None
        if standby is not None:
            standby.discard()

    def close(self) -> None:
        if self.files.closed:
            return
        self._discard_standby()
        if self._limits is not None:
            self._limits.close()
        self._release()
        self.files.close()

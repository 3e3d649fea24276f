"""What the docker backend's two sandboxes share, whichever daemon runs their container.

One container per sandbox (per item), created on the first command through the docker SDK (never
the docker CLI). File actions are every backend's (:mod:`pytest_mlab.sandbox.workspace`): the
harness does them on a host workspace, through the one path-safety function; the container sees
the workspace at the same absolute path. How it gets there is each subclass's: bind mounts on a
daemon of this machine (:mod:`.local_daemon`), archives on one of another (:mod:`.remote`).

Inside, by default: no network (unless the task asks for it), a memory limit for the whole
container (the task's ``limits.memory``, default 4 GiB, no swap), a process limit (the task's
``limits.pids``, default 512), 2 CPUs, a read-only root filesystem, all capabilities dropped, no
new privileges, a private /tmp and HOME, and a non-root user. The container's init (docker-init,
running ``sleep``) belongs to root, so ``kill -9 -1`` run as the sandbox user after each command
ends everything the command started and nothing else; when even that cannot start (a fork bomb
filled the process table), the container is killed and started again.

Containers carry labels naming the process that created them and the time until which it may use
them (the run's ``max_time`` and an hour); containers whose creator is gone (a killed worker or
session), or whose lease ran out where the creator is another machine's, are removed at the next
session start and by ``pytest-mlab clean`` (:mod:`.leftovers`).
"""

from __future__ import annotations

import abc
import functools
import os
import re
import socket
import stat
import time
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from pytest_mlab.errors import HostLost, SandboxError
from pytest_mlab.sandbox.base import ExecResult, Sandbox, SandboxOptions, memory_limit_notice, signal_exit_code
from pytest_mlab.sandbox.capture import Output, feed_stdin, start_thread
from pytest_mlab.sandbox.docker import leftovers
from pytest_mlab.sandbox.docker.conventions import (HOME, LABEL, LEASE_GRACE, LEASE_LABEL, OWNER_LABEL, RUN_LABEL,
                                                    SANDBOX_UID)
from pytest_mlab.sandbox.docker.daemon import connect
from pytest_mlab.sandbox.docker.data_volumes import lease_until
from pytest_mlab.sandbox.docker.gpus import device_requests, gpu_machine
from pytest_mlab.sandbox.docker.hosts import current_host, host_answers
from pytest_mlab.sandbox.docker.image import DEFAULT_IMAGE, ensure_image, host_init, host_python, uses_host_runtime
from pytest_mlab.sandbox.environ import clean_environment
from pytest_mlab.sandbox.gpus import cuda_environment
from pytest_mlab.sandbox.owner import owner_label
from pytest_mlab.sandbox.workspace import HostWorkspace, OnHostWorkspace
from pytest_mlab.spec.models import DEFAULT_DISK, DEFAULT_MAX_TIME, DEFAULT_MEMORY, DEFAULT_PIDS

DEFAULT_CPUS = 2.0
#: Run as the sandbox user after each command: ends everything commands started, prints the OOM counters.
KILL_ALL = ("kill -9 -1 2>/dev/null; "
            "cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null; true")
_OOM_KILLS = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)
_POLL_MAX_S = 0.25
_READ_GRACE_S = 2.0


class ContainerSandbox(OnHostWorkspace, Sandbox):
    """Workspace = a host folder the container sees at the same path; commands = docker execs."""

    name = "docker"
    leftover_noun = "container"
    kill_script = KILL_ALL  # run as the sandbox user after each command; prints the OOM counters

    def __init__(self, workspace: Path | None = None, *, base_env: dict[str, str] | None = None,
                 options: SandboxOptions | None = None, image: str | None = None) -> None:
        self.options = options or SandboxOptions()
        self._base_env = dict(base_env or {})
        self.host = current_host()
        if self.options.gpu_claim is not None:  # the run's GPUs are those of the machine it runs on
            self.options = replace(self.options, gpus=self.options.gpu_claim.ids_on(gpu_machine(self.host)))
        self._client = connect()
        self.image = self._image(image)
        self._host_runtime = uses_host_runtime(self._client, self.image)
        self.python = host_python() if self._host_runtime else "python3"
        self._as_root = os.getuid() == 0 or self.host.remote  # remotely, nothing is shared with this user
        uid, gid = (SANDBOX_UID, SANDBOX_UID) if self._as_root else (os.getuid(), os.getgid())
        self.user = f"{uid}:{gid}"
        self.files = HostWorkspace(workspace, sandbox=self.name, may_link=_linkable)
        self._container: Any = None
        self._oom_kills = 0
        self._init_pid = 0  # the container's init on this machine, for its cgroup's CPU counter
        self._kill_report: bytes | None = None  # what kill_script printed after the last command
        self._remove = None

    # -- the backend's lifecycle ---------------------------------------------------------------

    @classmethod
    def unavailable(cls) -> str | None:
        """Why docker sandboxes cannot run here, or None. Builds the default image when missing."""
        return _failure(lambda: ensure_image(connect(), DEFAULT_IMAGE))

    @classmethod
    def leftovers_unreachable(cls) -> str | None:
        """Why the daemon cannot be asked about containers now, or None (cheap: builds no image)."""
        return _failure(connect)

    @classmethod
    def remove_leftovers(cls, *, everything: bool = False) -> list[str]:
        return leftovers.remove_leftovers(everything=everything)

    # -- what each daemon's sandbox does its own way -------------------------------------------

    @abc.abstractmethod
    def _image(self, image: str | None) -> str:
        """The image to run, built or checked on this sandbox's daemon."""

    @abc.abstractmethod
    def _mounts(self) -> list[Any]:
        """What the container mounts: the workspace's way in, and the runtime or data it needs."""

    @abc.abstractmethod
    def _tmpfs(self, memory: int) -> dict[str, str]:
        """The container's tmpfs mounts, given its memory limit."""

    @abc.abstractmethod
    def _hand_over(self) -> None:
        """Before each command: give the sandbox user what the harness wrote."""

    @abc.abstractmethod
    def _cpu_seconds(self, container: Any) -> float | None:
        """CPU seconds (user + system) the container's cgroup has used so far, read where nothing
        running inside can change it; None when it cannot be read."""

    def _before_start(self, container: Any) -> None:
        """What goes into a created container before its first process (nothing: the workspace is mounted)."""

    # -- the container -------------------------------------------------------------------------

    def _start(self) -> Any:
        from docker.errors import DockerException
        from docker.types import Ulimit

        memory = self.options.memory or DEFAULT_MEMORY
        disk = self.options.disk or DEFAULT_DISK  # RLIMIT_FSIZE, in bytes: no file may grow past the quota
        cpus = min(self.options.cpus or DEFAULT_CPUS, float(os.cpu_count() or 1))
        devices = device_requests(self._client, self.options)
        name = re.sub(r"[^a-zA-Z0-9_.-]+", "-", f"mlab-{self.options.label or 'run'}")[:60]
        default = self._host_runtime
        init = host_init() if default else []
        try:
            container = self._client.containers.create(
                self.image, [*init, "sleep", "infinity"], init=not default, user="0:0",
                name=f"{name}-{os.getpid()}-{id(self) & 0xFFFFFF:x}",
                labels={LABEL: "1", OWNER_LABEL: owner_label(), RUN_LABEL: self.options.label,
                        LEASE_LABEL: lease_until((self.options.lease or DEFAULT_MAX_TIME) + LEASE_GRACE)},
                network_mode="bridge" if self.options.network else "none",
                mounts=self._mounts(), tmpfs=self._tmpfs(memory),
                read_only=True,
                mem_limit=memory, memswap_limit=memory, pids_limit=self.options.pids or DEFAULT_PIDS,
                ulimits=[Ulimit(name="fsize", soft=disk, hard=disk)],
                nano_cpus=int(cpus * 1e9), cap_drop=["ALL"], security_opt=["no-new-privileges"],
                privileged=False, device_requests=devices, environment={"PATH": "/usr/bin:/bin"})
        except DockerException as exc:
            raise SandboxError(f"cannot start a docker container from {self.image!r}: "
                               f"{getattr(exc, 'explanation', None) or exc}") from exc
        self._remove = weakref.finalize(self, _remove_container, self._client, container.id)
        try:
            self._before_start(container)
            container.start()
        except DockerException as exc:
            self._remove()
            raise SandboxError(f"cannot start a docker container from {self.image!r}: "
                               f"{getattr(exc, 'explanation', None) or exc}") from exc
        return container

    def _ensure_container(self) -> Any:
        if self._container is None:
            self._container = self._start()
            self._started()
        return self._container

    def _started(self) -> None:
        """After the container (re)started: its init's pid (for its cgroup's CPU counter) and HOME."""
        self._container.reload()
        self._init_pid = int(self._container.attrs.get("State", {}).get("Pid") or 0)
        self._run_as_user(f"mkdir -p {HOME}")

    def _run_as_user(self, script: str) -> bytes | None:
        """Output of a shell script run as the sandbox user; None when it could not run."""
        from docker.errors import DockerException

        try:
            result = self._container.exec_run(["/bin/sh", "-c", script], user=self.user, demux=False)
        except DockerException:
            return None
        return result.output or b"" if result.exit_code == 0 else None

    def _kill_all(self) -> bool:
        """End everything commands started; True when the memory limit killed something since last time."""
        from docker.errors import DockerException

        report = self._run_as_user(self.kill_script)
        if report is None:  # no process can start (pids limit): take the whole container down
            report = b""
            try:
                self._container.kill()
                self._container.start()
                self._started()
            except DockerException as exc:
                raise SandboxError(f"cannot restart the sandbox's container: {exc}") from exc
        self._kill_report = report
        counts = [int(value) for value in _OOM_KILLS.findall(report)]
        if not counts:
            return False
        seen, self._oom_kills = self._oom_kills, max(counts)
        return self._oom_kills > seen

    # -- commands ------------------------------------------------------------------------------

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        path = f"{os.path.dirname(self.python)}:/usr/local/bin:/usr/bin:/bin" if self._host_runtime \
            else "/usr/local/bin:/usr/bin:/bin"
        # the container has only the devices of its own GPUs, numbered from 0: none assigned is the
        # only case where CUDA needs telling
        gpus = cuda_environment(()) if self.options.gpus == () else {}
        return clean_environment({"HOME": HOME, "TMPDIR": "/tmp", "PATH": path, **self._base_env, **(env or {}), **gpus})

    def exec(self, argv: list[str], *, timeout: float, output_limit: int, env: dict[str, str] | None = None,
             stdin: str | None = None) -> ExecResult:
        self.files.check_open()
        if not argv:
            raise SandboxError("exec needs a command to run, got an empty argv")
        try:
            return self._exec(argv, timeout=timeout, output_limit=output_limit, env=env, stdin=stdin)
        except HostLost:
            raise
        except Exception as exc:
            if not host_answers(self._client):
                raise HostLost(f"the docker host {self.host.name} stopped answering while running {argv[0]!r} "
                               f"({type(exc).__name__}: {exc}); the run is an infrastructure failure, and "
                               "--mlab-resume runs it again") from exc
            raise

    def _exec(self, argv: list[str], *, timeout: float, output_limit: int, env: dict[str, str] | None,
              stdin: str | None) -> ExecResult:
        from docker.errors import DockerException

        container = self._ensure_container()
        self._hand_over()
        cpu_before = self._cpu_seconds(container)
        started = time.monotonic()
        api = self._client.api
        try:
            exec_id = api.exec_create(container.id, list(argv), stdin=stdin is not None, user=self.user,
                                      workdir=str(self.workspace), environment=self._environment(env))["Id"]
            stream = api.exec_start(exec_id, socket=True)
        except DockerException as exc:
            raise SandboxError(f"could not start {argv[0]!r} in the docker sandbox: {exc}") from exc
        output = Output(output_limit)
        raw = getattr(stream, "_sock", stream)
        reader = start_thread(_read_frames, stream, output)
        if stdin is not None:
            start_thread(feed_stdin, stdin, raw.sendall, functools.partial(_shutdown, raw, socket.SHUT_WR))
        elif hasattr(raw, "shutdown"):
            _shutdown(raw, socket.SHUT_WR)
        try:
            exit_code = _wait_for_exit(api, exec_id, started + max(0.0, timeout))
        finally:
            out_of_memory = self._kill_all()
            reader.join(_READ_GRACE_S)
            _shutdown(raw, socket.SHUT_RDWR)
            reader.join(_READ_GRACE_S)
            stream.close()
        cpu_after = self._cpu_seconds(container)  # after the kill: what the command left running is counted too
        stderr = output.stderr.text()
        if out_of_memory:
            stderr += memory_limit_notice(self.options.memory or DEFAULT_MEMORY)
        return ExecResult(
            returncode=signal_exit_code(exit_code) if exit_code is not None else None,
            stdout=output.stdout.text(), stderr=stderr, timed_out=exit_code is None,
            duration=time.monotonic() - started, truncated_bytes=output.truncated_bytes,
            cpu_time=cpu_after - cpu_before if cpu_before is not None and cpu_after is not None
            and cpu_after >= cpu_before else None)

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        if self.files.closed:
            return
        if self._remove is not None:
            self._remove()
        self.files.close()


def _failure(check: Callable[[], object]) -> str | None:
    try:
        check()
    except SandboxError as exc:
        return str(exc)
    return None


def _linkable(source: str) -> bool:
    """Whether a data file may be hard-linked into the workspace: linked data must stay the harness
    user's, out of the sandbox user's reach. Without root that protection is impossible, and a
    file its group or others may write has none, so such files are copied."""
    return os.getuid() == 0 and not os.stat(source).st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _remove_container(client: Any, container_id: str) -> None:
    """Finalizer: must not reference the sandbox."""
    try:
        client.api.remove_container(container_id, force=True, v=True)
    except Exception:  # already gone, or the daemon is; the next session start removes it
        pass


def _wait_for_exit(api: Any, exec_id: str, deadline: float) -> int | None:
    """The command's exit code, or None when ``deadline`` passed first."""
    pause = 0.005
    while True:
        info = api.exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        time.sleep(min(pause, remaining))
        pause = min(pause * 2, _POLL_MAX_S)


def _read_frames(stream: Any, output: Output) -> None:
    """Demultiplex docker's attach stream (stdout = 1, stderr = 2) into the capped buffers."""
    from docker.utils.socket import frames_iter

    try:
        for kind, data in frames_iter(stream, tty=False):
            if data:
                (output.stdout if kind == 1 else output.stderr).feed(data)
    except (OSError, ValueError):
        return


def _shutdown(raw: Any, how: int) -> None:
    try:
        raw.shutdown(how)
    except (OSError, AttributeError):
        pass

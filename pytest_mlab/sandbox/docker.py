"""The docker backend: a workspace on the host, with every command run in a container.

One container per sandbox (per item), created on the first command through the docker SDK (never
the docker CLI). File actions are every backend's (:mod:`.workspace`): the harness does them on
the host workspace, through the one path-safety function. The workspace is bind-mounted into the
container at the same absolute path, so tracebacks read as under the local backend and nothing
needs copying in or out; the harness only touches it between commands, after everything a
command started has been killed. Hidden answers and graders are never in the workspace, so they
never enter the container.

Inside, by default: no network (unless the task asks for it), a memory limit for the whole
container (the task's ``limits.memory``, default 4 GiB, no swap, the tmpfs /tmp included), a
process limit (the task's ``limits.pids``, default 512), 2 CPUs, a read-only root filesystem, all
capabilities dropped, no new privileges, a private tmpfs /tmp and HOME, and a non-root user.
The container's init (docker-init, running ``sleep``) belongs to root, so ``kill -9 -1`` run as
the sandbox user after each command ends everything the command started and nothing else; when
even that cannot start (a fork bomb filled the process table), the container is killed and
started again.

Data files hard-linked from the cache stay owned by the harness user (known by inode, so renaming
one changes nothing) while everything else in the workspace is handed to the sandbox user, so code
in the container cannot write through the links.
That needs the harness to run as root; otherwise commands run as the harness user and data files
are copied instead of linked.

Containers carry labels naming the process that created them; containers whose creator is gone
(a killed worker or session) are removed at the next session start and by ``pytest-mlab clean``.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import stat
import time
import warnings
import weakref
from pathlib import Path
from typing import Any, Callable

from pytest_mlab.errors import HostLost, SandboxError
from pytest_mlab.sandbox.base import ExecResult, Sandbox, SandboxOptions, memory_limit_notice, signal_exit_code
from pytest_mlab.sandbox.capture import Output, feed_stdin, start_thread
from pytest_mlab.sandbox.docker_image import (DEFAULT_IMAGE, build_task_image, ensure_image, host_init, host_python,
                                              host_runtime_binds, uses_host_runtime)
from pytest_mlab.sandbox.docker_hosts import (DockerHost, DockerHostWarning, current_host, forget_host, host_answers,
                                              hosts_to_clean)
from pytest_mlab.sandbox.environ import clean_environment
from pytest_mlab.sandbox.gpus import cuda_environment
from pytest_mlab.sandbox.owner import owner_gone, owner_label
from pytest_mlab.sandbox.workspace import HostWorkspace, OnHostWorkspace
from pytest_mlab.spec.models import DEFAULT_MEMORY, DEFAULT_PIDS

LABEL = "pytest-mlab"  # every container we create has it
OWNER_LABEL = "pytest-mlab.owner"  # "host:pid:start" of the process that created it
RUN_LABEL = "pytest-mlab.run"  # the run id
SANDBOX_UID = 65532  # the "nonroot" user of distroless images; owns nothing on a usual host
DEFAULT_CPUS = 2.0
HOME = "/tmp/home"
INSTALL_HINT = ("install docker (Debian/Ubuntu: apt-get install docker.io) and the docker SDK (pip install docker), "
                "or choose another sandbox with --sandbox=bwrap or --sandbox=local")
_KILL_ALL = ("kill -9 -1 2>/dev/null; "
             "cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events 2>/dev/null; true")
_OOM_KILLS = re.compile(rb"^oom_kill (\d+)$", re.MULTILINE)
_POLL_MAX_S = 0.25
_READ_GRACE_S = 2.0


# ---------------------------------------------------------------------------------------------
# The daemon


def connect() -> Any:
    """A docker client for this process's host (``--mlab-docker-hosts``, else the environment's
    daemon), or a SandboxError saying what to install or start."""
    host = current_host()
    return host.client() if host.url else _environment_client()


@functools.lru_cache(maxsize=None)
def _environment_client() -> Any:
    try:
        import docker
    except ImportError:
        raise SandboxError(f"the docker SDK for Python is not installed (pip install docker); {INSTALL_HINT}") from None
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as exc:
        raise SandboxError(
            f"the docker daemon is not reachable ({exc}); start it (systemctl start docker, or "
            "dockerd --bridge=none --iptables=false & as root) and make sure this user may use it "
            f"(the docker group, or DOCKER_HOST); or {INSTALL_HINT.split(', or ')[-1]}") from None
    return client


def _failure(check: Callable[[], object]) -> str | None:
    try:
        check()
    except SandboxError as exc:
        return str(exc)
    return None


def remove_leftovers(*, everything: bool = False, hosts: tuple[DockerHost, ...] | None = None) -> list[str]:
    """Remove pytest-mlab containers whose creating process is gone (all of them with
    ``everything``), with their workspace volumes, and the data volumes no container uses whose
    session is over; on every host of the pool (``hosts``: these instead). Returns the names
    removed, prefixed with the host where there are several. Containers of running sessions are kept."""
    from pytest_mlab.sandbox.docker_remote import remove_data_volumes

    chosen = hosts_to_clean() if hosts is None else hosts
    removed = []
    for host in chosen:
        prefix = f"{host.name}: " if len(chosen) > 1 else ""
        try:
            client = host.client() if host.url else _environment_client()
            names = [*_remove_containers(client, everything), *remove_data_volumes(client, everything=everything)]
        except Exception as exc:  # a host of several that stopped answering must not stop the others
            if len(chosen) == 1:
                if isinstance(exc, SandboxError):
                    raise
                raise SandboxError(f"cannot remove leftovers on the docker host {host.name}: {exc}") from exc
            warnings.warn(DockerHostWarning(f"docker host {host.name} not cleaned: {exc}"), stacklevel=2)
            continue
        removed.extend(prefix + name for name in names)
    return removed


def _remove_containers(client: Any, everything: bool) -> list[str]:
    from docker.errors import APIError, NotFound

    removed = []
    # ignore_removed: a container another session removes between listing and inspecting is not an error
    for container in client.containers.list(all=True, filters={"label": LABEL}, ignore_removed=True):
        if everything or owner_gone(container.labels.get(OWNER_LABEL, "")):
            try:
                container.remove(force=True, v=True)  # v: its anonymous volumes (a remote workspace) too
            except NotFound:
                continue
            except APIError as exc:
                raise SandboxError(f"cannot remove the leftover container {container.name}: {exc}") from exc
            removed.append(container.name)
    return removed


def _remove_container(client: Any, container_id: str) -> None:
    """Finalizer: must not reference the sandbox."""
    try:
        client.api.remove_container(container_id, force=True, v=True)
    except Exception:  # already gone, or the daemon is; the next session start removes it
        pass


# ---------------------------------------------------------------------------------------------
# The backend


def _linkable(source: str) -> bool:
    """Whether a data file may be hard-linked into the workspace: linked data must stay the harness
    user's, out of the sandbox user's reach. Without root that protection is impossible, and a
    file its group or others may write has none, so such files are copied."""
    return os.getuid() == 0 and not os.stat(source).st_mode & (stat.S_IWGRP | stat.S_IWOTH)


class DockerSandbox(OnHostWorkspace, Sandbox):
    """Workspace = host directory bind-mounted into a container; commands = docker execs."""

    name = "docker"
    leftover_noun = "container"
    kill_script = _KILL_ALL  # run as the sandbox user after each command; prints the OOM counters

    # -- the backend's lifecycle ---------------------------------------------------------------

    @classmethod
    def open(cls, **kwargs: Any) -> DockerSandbox:
        """The docker sandbox of this process's host: bind mounts for a local daemon, archives and
        volumes for a remote one (see :mod:`.docker_remote`). A host that stopped answering since the
        last sandbox is dropped here, so the item goes to one that answers."""
        host = current_host()
        if host.url and not host_answers(host.client()):
            forget_host()
            host = current_host()  # warns of the lost one; a SandboxError when none is left
        if host.remote:
            from pytest_mlab.sandbox.docker_remote import RemoteDockerSandbox

            return RemoteDockerSandbox(**kwargs)
        return cls(**kwargs)

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
        return remove_leftovers(everything=everything)

    def __init__(self, workspace: Path | None = None, *, base_env: dict[str, str] | None = None,
                 options: SandboxOptions | None = None, image: str | None = None) -> None:
        self.options = options or SandboxOptions()
        self._base_env = dict(base_env or {})
        self.host = current_host()
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

    def _image(self, image: str | None) -> str:
        """The image to run, built or checked on this sandbox's daemon."""
        if image is None and self.options.image is None and self.options.dockerfile is not None:
            image = build_task_image(self._client, self.options.dockerfile, host=self.host)
        chosen = image or self.options.image or DEFAULT_IMAGE
        ensure_image(self._client, chosen)
        return chosen

    # -- files ---------------------------------------------------------------------------------

    def _hand_over(self) -> None:
        """Give the sandbox user what the harness wrote, except data linked from the cache."""
        if not self._as_root:
            return
        for directory, dirnames, filenames in os.walk(self.workspace):
            for name in (".", *dirnames, *filenames):
                path = os.path.join(directory, name)
                try:
                    info = os.lstat(path)
                    if info.st_uid == 0 and not self.files.linked.holds(info):
                        os.lchown(path, SANDBOX_UID, SANDBOX_UID)
                except OSError:
                    continue

    # -- the container -------------------------------------------------------------------------

    def _mounts(self) -> list[Any]:
        from docker.types import Mount

        mounts = []
        if self._host_runtime:
            mounts = [Mount(path, path, type="bind", read_only=True) for path in host_runtime_binds()]
        # no working_dir for the container: docker would create /tmp below the tmpfs, mode 755
        mounts.append(Mount(str(self.workspace), str(self.workspace), type="bind"))
        return mounts

    def _start(self) -> Any:
        from docker.errors import DockerException

        memory = self.options.memory or DEFAULT_MEMORY
        cpus = min(self.options.cpus or DEFAULT_CPUS, float(os.cpu_count() or 1))
        devices = device_requests(self._client, self.options)
        name = re.sub(r"[^a-zA-Z0-9_.-]+", "-", f"mlab-{self.options.label or 'run'}")[:60]
        default = self._host_runtime
        init = host_init() if default else []
        try:
            container = self._client.containers.create(
                self.image, [*init, "sleep", "infinity"], init=not default, user="0:0",
                name=f"{name}-{os.getpid()}-{id(self) & 0xFFFFFF:x}",
                labels={LABEL: "1", OWNER_LABEL: owner_label(), RUN_LABEL: self.options.label},
                network_mode="bridge" if self.options.network else "none",
                mounts=self._mounts(), tmpfs=self._tmpfs(memory),
                read_only=True,
                mem_limit=memory, memswap_limit=memory, pids_limit=self.options.pids or DEFAULT_PIDS,
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

    def _tmpfs(self, memory: int) -> dict[str, str]:
        """The private /tmp (and HOME in it), counted in the memory limit."""
        return {"/tmp": f"rw,exec,nosuid,nodev,size={memory},mode=1777"}

    def _before_start(self, container: Any) -> None:
        """What goes into a created container before its first process (nothing: the workspace is mounted)."""

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

    def _cpu_seconds(self, container: Any) -> float | None:
        """CPU seconds (user + system) the container's cgroup has used so far: every process of the
        container, reaped or not, read where nothing running inside can change it (its cgroup file
        system is read-only there), on this machine; the daemon's stats (a second per call) only
        where that fails. None when the counter was restarted with the container."""
        seconds = _host_cgroup_cpu(self._init_pid) if self._init_pid else None
        return seconds if seconds is not None else _stats_cpu_seconds(container)

    # -- lifetime ------------------------------------------------------------------------------

    def close(self) -> None:
        if self.files.closed:
            return
        if self._remove is not None:
            self._remove()
        self.files.close()


def device_requests(client: Any, options: SandboxOptions) -> list[Any]:
    """The GPUs the container gets: those assigned to the item (``options.gpus``), or, where no
    assignment was made, every GPU when the task needs one. Where docker cannot pass GPUs through,
    a task that needs one fails saying why, and any other runs on the CPU."""
    from docker.types import DeviceRequest

    if not options.passes_gpus:
        return []
    if not _has_gpu(client, current_host().remote):
        if options.gpu:
            raise SandboxError(f"{options.label or 'the run'} needs a GPU, but docker here cannot pass one into "
                               "a container (no /dev/nvidia0, or no NVIDIA runtime in `docker info`): install the "
                               "NVIDIA Container Toolkit, or choose --sandbox=bwrap")
        return []
    if options.gpus is None:
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return [DeviceRequest(device_ids=list(options.gpus), capabilities=[["gpu"]])]


@functools.lru_cache(maxsize=None)
def host_gpus(host: DockerHost) -> tuple[str, ...]:
    """The indexes of a remote host's GPUs, as its own ``nvidia-smi`` lists them, run in a short-lived
    container (the NVIDIA runtime brings the program in); none where the daemon has no NVIDIA
    runtime or the listing fails. Asked once per process and host."""
    from docker.errors import DockerException
    from docker.types import DeviceRequest

    from pytest_mlab.sandbox.docker_image import RUNTIME_IMAGE

    try:
        client = host.client()
        if not _has_gpu(client, remote=True):
            return ()
        output = client.containers.run(
            RUNTIME_IMAGE, ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], remove=True,
            network_mode="none", labels={LABEL: "1", OWNER_LABEL: owner_label()},
            device_requests=[DeviceRequest(count=-1, capabilities=[["gpu", "utility"]])])
    except (DockerException, SandboxError):
        return ()
    return tuple(line.strip() for line in output.decode(errors="replace").splitlines() if line.strip().isdigit())


def _has_gpu(client: Any, remote: bool) -> bool:
    """A GPU is passed through only when the host has one (a remote host's own devices cannot be
    looked at from here: its NVIDIA runtime stands for them) and docker has the NVIDIA runtime hook."""
    runtimes = client.info().get("Runtimes", {})
    return (remote or Path("/dev/nvidia0").exists()) and ("nvidia" in runtimes or any("nvidia" in str(r) for r in runtimes.values()))


_CPU_FILES = ("cpuacct/cpuacct.usage", "cpu,cpuacct/cpuacct.usage", "cpu.stat")  # cgroup v1 (ns), v2 (usage_usec)
_READ_CPU = "cat " + " ".join(f"/sys/fs/cgroup/{name}" for name in _CPU_FILES) + " 2>/dev/null; true"


def cgroup_cpu_seconds(text: str) -> float | None:
    """CPU seconds from a cgroup's counter file: v1's cpuacct.usage (nanoseconds) or v2's cpu.stat."""
    for line in text.splitlines():
        words = line.split()
        if len(words) == 1 and words[0].isdigit():
            return int(words[0]) / 1e9
        if len(words) == 2 and words[0] == "usage_usec" and words[1].isdigit():
            return int(words[1]) / 1e6
    return None


def _host_cgroup_cpu(pid: int) -> float | None:
    """The CPU counter of the cgroup process ``pid`` (the container's init) is in, read on this machine."""
    try:
        with open(f"/proc/{pid}/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        folders = [f"/sys/fs/cgroup/{c}" for c in controllers.split(",") if c in ("cpuacct", "cpu")] if controllers \
            else ["/sys/fs/cgroup"]
        for folder in folders:
            for name in ("cpuacct.usage", "cpu.stat"):
                try:
                    with open(f"{folder}{path}/{name}") as counter:
                        seconds = cgroup_cpu_seconds(counter.read())
                except OSError:
                    continue
                if seconds is not None:
                    return seconds
    return None


def _stats_cpu_seconds(container: Any) -> float | None:
    """CPU seconds (user + system) the container's cgroup has used so far, from the daemon's
    stats (the cgroup's own counter: every process of the container, reaped or not). Read by the
    harness, outside the container: nothing running inside can change it (its cgroup file system
    is read-only there). None when the daemon does not say, or the container was restarted
    (the counter starts again at 0)."""
    from docker.errors import DockerException

    try:
        stats = container.stats(stream=False, one_shot=True)
        usage = stats["cpu_stats"]["cpu_usage"]["total_usage"]  # nanoseconds
    except (DockerException, KeyError, TypeError):
        return None
    return usage / 1e9 if isinstance(usage, int) and usage > 0 else None


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

"""The one sandbox interface every backend (local, docker, bwrap) implements, lifecycle included."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_mlab.sandbox.tree_walk import Bound
from pytest_mlab.spec.models import DEFAULT_WORKSPACE_DEPTH, DEFAULT_WORKSPACE_FILES

if TYPE_CHECKING:
    from pytest_mlab.sandbox.gpus import GpuClaim
    from pytest_mlab.sandbox.quota_mount import QuotaMount
    from pytest_mlab.spec.models import Limits, TaskSpec


@dataclass(frozen=True)
class ExecResult:
    """What a command run in the sandbox produced. Output is already capped."""

    returncode: int | None  # None when the command was killed for running too long
    stdout: str
    stderr: str
    timed_out: bool
    duration: float  # seconds
    truncated_bytes: int = 0  # bytes of output dropped by the cap (stdout + stderr)
    # CPU seconds (user + system) of everything the command started, measured by the harness from
    # outside the command's processes; None where the backend cannot tell
    cpu_time: float | None = None


def memory_limit_notice(memory: int) -> str:
    """The line a command's output ends with when the sandbox's memory limit killed part of it."""
    return f"\n[killed: the sandbox's memory limit ({memory / (1 << 20):.0f} MiB) was reached]\n"


def signal_exit_code(code: int) -> int:
    """A wrapper's 128+N exit status for "killed by signal N" as subprocess reports it (-N), so
    every backend's observations read like the local backend's."""
    return -(code - 128) if 128 < code <= 128 + 64 else code


@dataclass(frozen=True)
class SandboxOptions:
    """What a run asks of its sandbox, from the task's limits and requirements.

    Backends that can enforce a field do (docker, bwrap); the local backend enforces what plain
    processes allow and ignores the rest. ``None`` means "no limit beyond the backend's default".
    """

    memory: int | None = None  # bytes, for everything the run's commands start
    cpus: float | None = None
    pids: int | None = None  # most processes/threads at once (fork-bomb guard)
    disk: int | None = None  # bytes: the workspace's quota, and the largest file any command may write
    workspace_depth: int = DEFAULT_WORKSPACE_DEPTH  # folders nested: how deep the harness's walks go
    workspace_files: int = DEFAULT_WORKSPACE_FILES  # files, folders and links: how many the walks see
    network: bool = False  # the task's spec asked for network access at run time
    gpu: bool = False  # the task needs a GPU (backends pass one through only when present)
    # the GPUs (nvidia-smi indexes) the item holds (--mlab-gpus, see gpus.py); () none, so its code
    # sees none; None: no assignment was made (a sandbox opened outside a session), see passes_gpus
    gpus: tuple[str, ...] | None = None
    # on a remote docker host: the run's claim on GPUs, which replaces ``gpus`` by the ids leased on
    # the host the sandbox opens on (a sandbox of the run may open on another host than the first)
    gpu_claim: GpuClaim | None = field(default=None, compare=False, repr=False)
    label: str = ""  # the run id, for naming/labelling containers and temp folders
    image: str | None = None  # docker only: the task's image (None: the default host-runtime image)
    dockerfile: Path | None = None  # docker only: a Dockerfile to build the task's image from
    # seconds the sandbox may live (the run's max_time; None: the default): a docker container is
    # labelled with it, so that one a dead machine left is swept from any other once it runs out
    lease: float | None = None

    @classmethod
    def for_task(cls, task: "TaskSpec", limits: "Limits", label: str) -> "SandboxOptions":
        """The sandbox a task's runs and measurements get: its limits and run-time requirements."""
        return cls(memory=limits.memory, pids=limits.pids, disk=limits.disk, workspace_depth=limits.workspace_depth,
                   workspace_files=limits.workspace_files, network=task.requires.network,
                   gpu=task.requires.gpu,
                   label=label, image=task.sandbox_image, dockerfile=task.sandbox_dockerfile, lease=limits.max_time)

    @property
    def bound(self) -> Bound:
        """How far the harness's own walks of the workspace go (:mod:`.tree_walk`)."""
        return Bound(self.workspace_depth, self.workspace_files)

    @property
    def passes_gpus(self) -> bool:
        """Whether GPU devices go into the sandbox: those assigned to the item when an assignment
        was made, else every GPU when the task needs one."""
        return bool(self.gpus) if self.gpus is not None else self.gpu


@dataclass(frozen=True)
class Entry:
    """One directory entry as ``list`` reports it."""

    name: str
    is_dir: bool
    size: int


class Sandbox(abc.ABC):
    """A workspace plus a place to run commands in it. The class is the backend: the registry
    (:mod:`.registry`) asks it, through its class methods, whether it can run here, to open a
    sandbox and to remove what killed sessions left of its own; each sandbox ends with ``close``.

    All ``path`` arguments are workspace-relative strings as an agent wrote them; every backend
    checks them with :func:`pytest_mlab.sandbox.paths.resolve_in_workspace` and raises
    :class:`pytest_mlab.errors.EnvError` for anything that leaves the workspace.
    """

    name: str = "abstract"
    python: str = "python"  # the interpreter Execute Script uses inside this sandbox
    #: What one of the backend's own leftovers is called in messages (docker: "container"); None
    #: when it leaves nothing beyond the temp folders and cgroups that every clean-up sweeps.
    leftover_noun: ClassVar[str | None] = None
    #: the quota overlay over the workspace (sandbox/quota_mount.py), for the backends that mount one
    _quota: QuotaMount | None = None

    # -- the backend's lifecycle ---------------------------------------------------------------

    @classmethod
    def open(cls, **kwargs: Any) -> "Sandbox":
        """A new sandbox of this backend; ``kwargs`` go to the constructor, which accepts
        ``options: SandboxOptions | None`` (the run's limits) in every backend."""
        return cls(**kwargs)

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this backend cannot run here (what to install), or None when it can."""
        return None

    @classmethod
    def leftovers_unreachable(cls) -> str | None:
        """Why the backend's own leftovers cannot be looked for now (docker: the daemon is down), or None."""
        return None

    @classmethod
    def remove_leftovers(cls, *, everything: bool = False) -> list[str]:
        """Remove the backend's own leftovers whose creating process is gone (``everything``: those
        of live processes too); the names removed."""
        return []

    # -- one sandbox -----------------------------------------------------------------------------

    @property
    @abc.abstractmethod
    def workspace(self) -> Path:
        """A host directory mirroring the workspace (for snapshots); up to date after ``sync_out``."""

    @abc.abstractmethod
    def exec(
        self,
        argv: list[str],
        *,
        timeout: float,
        output_limit: int,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        """Run ``argv`` with the workspace as working directory; kill its whole process tree on
        timeout and after it exits; never pass the harness's environment through unfiltered."""

    @abc.abstractmethod
    def read(self, path: str) -> bytes: ...

    @abc.abstractmethod
    def write(self, path: str, data: bytes, *, append: bool = False) -> None: ...

    @abc.abstractmethod
    def list(self, path: str) -> list[Entry]: ...

    @abc.abstractmethod
    def exists(self, path: str) -> bool: ...

    @abc.abstractmethod
    def copy(self, source: str, destination: str) -> None:
        """Copy a file inside the workspace."""

    @abc.abstractmethod
    def copy_in(self, host_path: Path, path: str, *, link: bool = False) -> None:
        """Put a host file or directory into the workspace. ``link=True`` may hard-link large
        read-only data instead of copying it."""

    @abc.abstractmethod
    def copy_out(self, path: str, host_path: Path) -> None: ...

    def expect_commands(self) -> None:
        """A hint that commands will follow (an agent's run begins): a backend may prepare now
        what starting one costs, off the first step's path. Nothing by default."""

    def sync_out(self) -> None:
        """Bring ``workspace`` up to date with the sandbox (no-op where they are the same)."""

    @property
    def lower_layer(self) -> int | None:
        """A descriptor of the workspace folder as it was before a quota's overlay went over it
        (sandbox/quota_mount.py), so that a snapshot hard-links read-only data from there; None
        where no overlay is mounted."""
        return self._quota.lower if self._quota is not None else None

    @abc.abstractmethod
    def close(self) -> None:
        """Kill everything still running and release the workspace. Idempotent."""

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

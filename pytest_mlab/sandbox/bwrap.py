"""The bwrap backend: the local backend's workspace, with every command run inside bubblewrap.

File actions are every backend's (:mod:`.workspace`: the harness does them on the host, through
the one path-safety function). Only commands differ: ``exec`` wraps the argv in ``bwrap`` so the code
sees

- the system directories (/usr, /bin, /lib...), a few files of /etc and the installation of the
  task runtime's Python (:mod:`pytest_mlab.task_runtime`: its prefixes and site-packages, not
  the harness's), all read-only, even where that installation lives under /tmp (it is bound after
  the private /tmp is mounted);
- its workspace, read-write, at the same absolute path as on the host, so tracebacks and
  ``os.getcwd()`` read as they do under the local backend;
- every data file hard-linked from the data cache bound read-only over itself, so writing,
  truncating, renaming or deleting it fails instead of changing the cache through the link;
- a fresh /proc, a minimal /dev, a private tmpfs /tmp and an empty HOME (/tmp/home).

Nothing else exists inside: not the user's home, the data cache with its hidden answers, the
graders, other runs' workspaces or the results folder. All namespaces are unshared (the network
too, unless the task asks for it), capabilities are dropped, the command runs in a new session,
and bwrap dies with the harness; ending bwrap ends the sandbox's pid namespace, so nothing the
command started survives it.

Every command also runs in the sandbox's cgroups (:mod:`.cgroups`, where the cgroup file system
is writable): memory (default 4 GiB) and process (default 512) limits, a kill of everything in
the group after each command, and the command's CPU time as the cgroup counts it. Where no cgroup
can be made, memory is limited per process by ``RLIMIT_DATA`` and the process count is not.

``--sandbox=auto`` uses this backend only when :func:`unavailable_reason`'s probe runs the
harness's own interpreter inside a real sandbox; when it cannot, the reason quotes bwrap's error.
"""

from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Iterable

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.base import ExecResult, SandboxOptions, signal_exit_code
from pytest_mlab.sandbox.environ import clean_environment
from pytest_mlab.sandbox.gpus import cuda_environment
from pytest_mlab.sandbox.host_runtime import ETC_FILES, SYSTEM_DIRS, python_dirs
from pytest_mlab.sandbox.local import LocalSandbox
from pytest_mlab.sandbox.owner import owned_prefix
from pytest_mlab.sandbox.quota_mount import NOT_YET, enforce_quota
from pytest_mlab.sandbox.threads import thread_environment

HOME = "/tmp/home"
_NETWORKETC_FILES = ("resolv.conf",)
OTHER_SANDBOX = "choose another sandbox with --sandbox=local (no isolation) or --sandbox=docker"
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), "
                f"or {OTHER_SANDBOX}")


def _system_args() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _gpu_devices() -> list[str]:
    """NVIDIA and DRI device nodes, passed through only when the item holds a GPU (all of them:
    ``CUDA_VISIBLE_DEVICES`` says which ones are its own)."""
    return sorted(glob.glob("/dev/nvidia*") + glob.glob("/dev/dri"))


def bwrap_command(workspace: Path, *, network: bool, read_only: Iterable[str] = (), gpu: bool = False,
                  python: str | None = None) -> list[str]:
    """The ``bwrap`` arguments (without the program to run) for a sandbox over ``workspace``,
    with ``python``'s installation bound (default: the task runtime's)."""
    executable = shutil.which("bwrap") or "bwrap"
    args = [executable, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if network:
        args.append("--share-net")
    args += _system_args()
    for name in (*ETC_FILES, *(_NETWORKETC_FILES if network else ())):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    # mounts apply in order: what may live under /tmp (a venv, the workspace) comes after the tmpfs
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", HOME]
    for path in python_dirs(python):
        args += ["--ro-bind", path, path]
    for device in _gpu_devices() if gpu else ():
        args += ["--dev-bind", device, device]
    args += ["--bind", str(workspace), str(workspace)]
    for path in read_only:
        args += ["--ro-bind", path, path]
    return [*args, "--chdir", str(workspace), "--"]


@functools.lru_cache(maxsize=None)
def unavailable_reason() -> str | None:
    """Why bwrap cannot run sandboxes here, or None when it can. Probes once per process by
    running pytest's own interpreter inside a real sandbox (cheap, and it never builds the task
    runtime, whose installation is bound the same way)."""
    if shutil.which("bwrap") is None:
        return f"bubblewrap is not installed (no 'bwrap' on PATH); {INSTALL_HINT}"
    with tempfile.TemporaryDirectory(prefix=owned_prefix("probe")) as workspace:
        argv = [*bwrap_command(Path(workspace), network=False, python=sys.executable), sys.executable, "-c",
                "print('ok')"]
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=60, env=clean_environment())
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap could not be started: {exc}; {INSTALL_HINT}"
    if proc.returncode == 0 and proc.stdout.strip() == b"ok":
        return None
    return probe_failure(proc.returncode, proc.stderr.decode("utf-8", "replace"))


# what bwrap and the kernel say when user namespaces are not allowed (sysctl, AppArmor, seccomp)
_NAMESPACE_ERRORS = ("namespace", "uid map", "gid map", "setgroups", "RTM_NEWADDR", "loopback")


def probe_failure(returncode: int, stderr: str) -> str:
    """The probe's real cause, in bwrap's own words, and what to do about it: user namespaces are
    blamed only when the error is about them."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    quoted = " | ".join(lines[-3:]) or "no error message"
    reason = f"bwrap is installed but the probe failed (exit code {returncode}: {quoted})"
    if any(line.startswith("bwrap: execvp") for line in lines):
        bound = ", ".join(python_dirs(sys.executable)) or "nothing"
        return (f"{reason}: the Python interpreter running pytest ({sys.executable}) is not found inside the "
                f"sandbox (bound from its installation: {bound}); run pytest with a Python installed elsewhere, "
                f"or {OTHER_SANDBOX}")
    if any(marker.lower() in line.lower() for line in lines for marker in _NAMESPACE_ERRORS):
        return (f"{reason}: unprivileged user namespaces seem to be disabled (e.g. sysctl "
                "kernel.unprivileged_userns_clone=1, or an AppArmor profile for bwrap on Ubuntu 24.04)")
    if any(line.startswith("bwrap:") for line in lines):
        return f"{reason}; {OTHER_SANDBOX}"
    return (f"{reason}: Python started inside the sandbox but failed; a part of its installation "
            f"({', '.join(python_dirs(sys.executable))}) may be hidden there")


class BwrapSandbox(LocalSandbox):
    """Workspace = host directory; commands = processes confined by bubblewrap."""

    name = "bwrap"
    #: bwrap runs each command in a pid namespace of its own (--unshare-all) and dies with the harness's
    #: process (--die-with-parent): when it ends or is killed, the kernel kills everything inside, so
    #: no scan of /proc is needed to find what a command left running
    tracks_process_tree = False

    @classmethod
    def unavailable(cls) -> str | None:
        return unavailable_reason()

    def __init__(self, workspace: Path | None = None, *, base_env: dict[str, str] | None = None,
                 options: SandboxOptions | None = None) -> None:
        super().__init__(workspace, base_env=base_env, options=options)
        python_bin = os.path.dirname(self.python)
        self._path = f"{python_bin}:/usr/local/bin:/usr/bin:/bin"
        #: how the disk quota holds: "file system" once mounted, else why it is only checked after each step
        self.quota_enforced = NOT_YET

    def _environment(self, env: dict[str, str] | None) -> dict[str, str]:
        return clean_environment({**thread_environment(), "HOME": HOME, "TMPDIR": "/tmp", "PATH": self._path,
                                  **self._base_env, **(env or {}), **cuda_environment(self.options.gpus)})

    def exec(self, argv: list[str], *, timeout: float, output_limit: int, env: dict[str, str] | None = None,
             stdin: str | None = None) -> ExecResult:
        self.files.check_open()
        if not argv:
            raise SandboxError("exec needs a command to run, got an empty argv")
        if self.quota_enforced == NOT_YET:  # once the starter files and data are in (quota_mount.py)
            self._quota, self.quota_enforced = enforce_quota(self)
        # linked data is bound read-only over itself, so the cache cannot be changed through it
        linked = self.files.linked.still_linked()
        wrapped = [*bwrap_command(self.workspace, network=self.options.network, read_only=linked,
                                  gpu=self.options.passes_gpus), *argv]
        # the local backend runs it in the sandbox's cgroups and kills the tree and the groups after
        result = super().exec(wrapped, timeout=timeout, output_limit=output_limit, env=env, stdin=stdin)
        code = signal_exit_code(result.returncode) if result.returncode is not None else None
        return replace(result, returncode=code)

    def close(self) -> None:
        """Kill what is left, undo the quota's mounts, then remove the workspace (the local backend's close)."""
        if self.files.closed:
            return
        if self._limits is not None:
            self._limits.close()
        if self._quota is not None:
            self._quota.close()
        super().close()

"""The docker backend on a daemon of this machine: the workspace is bind-mounted, never copied.

The host workspace is bind-mounted into the container at the same absolute path, so tracebacks
read as under the local backend and nothing needs copying in or out; the harness only touches it
between commands, after everything a command started has been killed. Hidden answers and graders
are never in the workspace, so they never enter the container. The private /tmp (and HOME in it)
is a tmpfs counted in the container's memory limit.

Data files hard-linked from the cache stay owned by the harness user (known by inode, so renaming
one changes nothing) while everything else in the workspace is handed to the sandbox user, so code
in the container cannot write through the links.
That needs the harness to run as root; otherwise commands run as the harness user and data files
are copied instead of linked.
"""

from __future__ import annotations

import itertools
import os
from typing import Any

from pytest_mlab.sandbox.docker.container import ContainerSandbox
from pytest_mlab.sandbox.docker.conventions import SANDBOX_UID
from pytest_mlab.sandbox.docker.cpu import host_cgroup_cpu, stats_cpu_seconds
from pytest_mlab.sandbox.docker.hosts import current_host, forget_host, host_answers
from pytest_mlab.sandbox.docker.image import DEFAULT_IMAGE, build_task_image, ensure_image, host_runtime_binds
from pytest_mlab.sandbox.docker.remote import RemoteDockerSandbox
from pytest_mlab.sandbox.quota_mount import NOT_YET, enforce_quota
from pytest_mlab.sandbox.tree_walk import walk_tree


class DockerSandbox(ContainerSandbox):
    """``--sandbox=docker``: workspace = host directory bind-mounted into a container."""

    @classmethod
    def open(cls, **kwargs: Any) -> ContainerSandbox:
        """The docker sandbox of this process's host: bind mounts for a local daemon, archives and
        volumes for a remote one (:class:`RemoteDockerSandbox`). A host that stopped answering since
        the last sandbox is dropped here, so the item goes to one that answers."""
        host = current_host()
        if host.url and not host_answers(host.client()):
            forget_host()
            host = current_host()  # warns of the lost one; a SandboxError when none is left
        if host.remote:
            return RemoteDockerSandbox(**kwargs)
        return cls(**kwargs)

    def _image(self, image: str | None) -> str:
        if image is None and self.options.image is None and self.options.dockerfile is not None:
            image = build_task_image(self._client, self.options.dockerfile, host=self.host)
        chosen = image or self.options.image or DEFAULT_IMAGE
        ensure_image(self._client, chosen)
        return chosen

    #: how the disk quota holds: "file system" once mounted (the container's bind mount of the
    #: workspace then shows it), else why it is only checked after each step
    quota_enforced = NOT_YET

    def _before_start(self, container: Any) -> None:
        """The quota's file system goes over the workspace before the container first starts, so
        that its bind mount shows it; a restarted container finds it mounted already."""
        if self.quota_enforced == NOT_YET:
            self._quota, self.quota_enforced = enforce_quota(self)

    def close(self) -> None:
        """The container goes first (it holds the workspace's mount), then the quota's mounts, then
        the workspace."""
        if self.files.closed:
            return
        if self._remove is not None:
            self._remove()
        if self._quota is not None:
            self._quota.close()
        super().close()

    def _hand_over(self) -> None:
        """Give the sandbox user what the harness wrote, except data linked from the cache."""
        if not self._as_root:
            return
        try:
            top = [(str(self.workspace), os.lstat(self.workspace))]
        except OSError:
            return
        # bounded: past the workspace's limits the snapshot ends the run, whatever is handed over
        for path, info in itertools.chain(top, walk_tree(self.workspace, self.options.bound)):
            try:
                if info.st_uid == 0 and not self.files.linked.holds(info):
                    os.lchown(path, SANDBOX_UID, SANDBOX_UID)
            except OSError:
                continue

    def _mounts(self) -> list[Any]:
        from docker.types import Mount

        mounts = []
        if self._host_runtime:
            mounts = [Mount(path, path, type="bind", read_only=True) for path in host_runtime_binds()]
        # no working_dir for the container: docker would create /tmp below the tmpfs, mode 755
        mounts.append(Mount(str(self.workspace), str(self.workspace), type="bind"))
        return mounts

    def _tmpfs(self, memory: int) -> dict[str, str]:
        """The private /tmp (and HOME in it), counted in the memory limit."""
        return {"/tmp": f"rw,exec,nosuid,nodev,size={memory},mode=1777"}

    def _cpu_seconds(self, container: Any) -> float | None:
        """Read on this machine from the container's cgroup (its init's); the daemon's stats (a
        second per call) only where that fails. None when the counter was restarted with the container."""
        seconds = host_cgroup_cpu(self._init_pid) if self._init_pid else None
        return seconds if seconds is not None else stats_cpu_seconds(container)

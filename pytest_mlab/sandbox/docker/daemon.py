"""The docker daemon a process's sandboxes talk to, through the docker SDK (never the docker CLI)."""

from __future__ import annotations

import functools
from typing import Any

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.hosts import DockerHost, current_host

INSTALL_HINT = ("install docker (Debian/Ubuntu: apt-get install docker.io) and the docker SDK (pip install docker), "
                "or choose another sandbox with --sandbox=bwrap or --sandbox=local")


def connect() -> Any:
    """A docker client for this process's host (``--mlab-docker-hosts``, else the environment's
    daemon), or a SandboxError saying what to install or start."""
    return client_of(current_host())


def client_of(host: DockerHost) -> Any:
    """A docker client for ``host``: a named daemon's own, else the environment's."""
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

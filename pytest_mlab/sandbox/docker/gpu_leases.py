"""Which session holds a remote docker host's GPU, agreed on the host itself.

Lock files agree only among the sessions of one machine. Controllers on different machines that
share a docker host must agree where they all look: on that host's daemon. A GPU is held there by
a container named for it (``pytest-mlab-gpu-<index>``), created, never started: docker refuses a
second container of the same name, so of two controllers that ask at once exactly one gets it.
The container carries the same owner and lease labels as every container pytest-mlab makes, so a
holder that died is recognised as every leftover is (:func:`.data_volumes.abandoned`: by its pid
on its own machine, else by its lease running out) and its GPU taken over, and ``pytest-mlab
clean`` sweeps what it left.
"""

from __future__ import annotations

from typing import Any, Callable

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.conventions import LABEL, LEASE_GRACE, LEASE_LABEL, OWNER_LABEL, RUN_LABEL
from pytest_mlab.sandbox.docker.data_volumes import abandoned, lease_until
from pytest_mlab.sandbox.docker.hosts import DockerHost
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE
from pytest_mlab.sandbox.owner import owner_label

NAME_PREFIX = "pytest-mlab-gpu-"
GPU_LABEL = "pytest-mlab.gpu"  # the index of the GPU a lease container holds
ATTEMPTS = 3  # a dead holder's container removed, then created again; another may win the race


def host_gpu_guard(host: DockerHost, max_time: float) -> Callable[[str, str], Callable[[], None] | None]:
    """What :class:`~pytest_mlab.sandbox.gpus.GpuPool` asks before it hands out one of ``host``'s
    GPUs: ``guard(gpu, run)`` holds the GPU on the host for that run and returns what lets it go,
    or None where a session of another machine holds it. The hold outlives a run of ``max_time``
    seconds by the grace every container gets, so only a dead holder's runs out."""
    seconds = max_time + LEASE_GRACE

    def guard(gpu: str, run: str) -> Callable[[], None] | None:
        return take_gpu(host, gpu, run, seconds)

    return guard


def take_gpu(host: DockerHost, gpu: str, run: str, seconds: float) -> Callable[[], None] | None:
    """Hold ``gpu`` on ``host`` for ``run`` for up to ``seconds``: what lets it go, or None when a
    live holder has it."""
    from docker.errors import APIError, DockerException, NotFound

    client = host.client()
    name = f"{NAME_PREFIX}{gpu}"
    labels = {LABEL: "1", OWNER_LABEL: owner_label(), RUN_LABEL: run, LEASE_LABEL: lease_until(seconds),
              GPU_LABEL: gpu}
    try:
        for _ in range(ATTEMPTS):
            try:
                held = client.containers.create(RUNTIME_IMAGE, ["true"], name=name, labels=labels,
                                                network_mode="none")
                return lambda: _let_go(held)
            except APIError as exc:
                if exc.status_code != 409:  # 409: a container of that name exists
                    raise
            try:
                holder = client.containers.get(name)
            except NotFound:  # let go in between: ask again
                continue
            if not abandoned(holder.labels):
                return None
            try:
                holder.remove(force=True)  # its holder is gone: the GPU is free
            except NotFound:
                pass
        return None
    except DockerException as exc:
        raise SandboxError(f"cannot hold GPU {gpu} on the docker host {host.name} ({exc}); the image "
                           f"{RUNTIME_IMAGE} must be there (pytest-mlab image)") from exc


def _let_go(held: Any) -> None:
    """A host that stopped answering keeps the container until its lease runs out or clean-up
    finds its owner gone: nothing to do here about it."""
    from docker.errors import DockerException

    try:
        held.remove(force=True)
    except DockerException:
        pass

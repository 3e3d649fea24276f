"""The GPUs a container gets, and the GPUs a remote docker host has to share out."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.sandbox.docker.conventions import LABEL, OWNER_LABEL
from pytest_mlab.sandbox.docker.hosts import DockerHost, current_host
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE
from pytest_mlab.sandbox.owner import owner_label


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

"""The GPUs a container gets, and the GPUs a remote docker host has to share out."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path
from typing import Any

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.sandbox.docker.conventions import LABEL, OWNER_LABEL
from pytest_mlab.sandbox.docker.hosts import DockerHost, current_host, pool
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE
from pytest_mlab.sandbox.gpus import list_gpus
from pytest_mlab.sandbox.owner import owner_label

PROBE_TIMEOUT = 60  # seconds for nvidia-smi in the probe container
_NO_GPU_DRIVER = "could not select device driver"  # docker's answer where no GPU driver is installed
_TOOLKIT_HOOKS = ("nvidia-container-runtime-hook", "nvidia-ctk")  # what docker's --gpus calls without a runtime


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
                               "a container (no /dev/nvidia0, or neither the NVIDIA runtime nor the container toolkit): install the "
                               "NVIDIA Container Toolkit, or choose --sandbox=bwrap")
        return []
    if options.gpus is None:
        return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return [DeviceRequest(device_ids=list(options.gpus), capabilities=[["gpu"]])]


def gpu_machine(host: DockerHost) -> DockerHost | None:
    """Whose GPUs a container on ``host`` gets: a remote host's own; a local daemon's are this
    machine's (None)."""
    return host if host.remote else None


@functools.lru_cache(maxsize=None)
def host_gpus(host: DockerHost) -> tuple[str, ...]:
    """The indexes of a remote host's GPUs, as its own ``nvidia-smi`` lists them in a short-lived
    container asking for every GPU, as ``docker run --gpus all`` does: so a host is found whether
    it has an ``nvidia`` runtime or only the container toolkit's hook. A host whose docker has no
    GPU driver has none; any other failure is a SandboxError naming the host (never taken for
    "no GPU"). Asked once per process and host."""
    from docker.errors import APIError, DockerException
    from docker.types import DeviceRequest

    client = host.client()
    probe = None
    try:
        probe = client.containers.create(
            RUNTIME_IMAGE, ["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
            network_mode="none", labels={LABEL: "1", OWNER_LABEL: owner_label()},
            device_requests=[DeviceRequest(count=-1, capabilities=[["gpu", "utility"]])])
        probe.start()  # where docker has no GPU driver, this is what refuses
        status = probe.wait(timeout=PROBE_TIMEOUT)
        output = probe.logs(stdout=True, stderr=False)
        if status.get("StatusCode") != 0:
            raise SandboxError(f"cannot list the GPUs of the docker host {host.name}: nvidia-smi exited with "
                               f"{status.get('StatusCode')}: {probe.logs().decode(errors='replace')[-500:]}")
    except APIError as exc:
        if _NO_GPU_DRIVER in str(exc):
            return ()
        raise SandboxError(f"cannot list the GPUs of the docker host {host.name}: {exc}") from exc
    except DockerException as exc:
        raise SandboxError(f"cannot list the GPUs of the docker host {host.name} (nvidia-smi run in {RUNTIME_IMAGE} "
                           f"there with every GPU): {exc}") from exc
    finally:
        if probe is not None:  # a container that failed to start stays unless removed
            try:
                probe.remove(force=True)
            except DockerException:
                pass
    return tuple(line.strip() for line in output.decode(errors="replace").splitlines() if line.strip().isdigit())


def pool_has_gpu() -> bool | None:
    """Whether a docker host of ``--mlab-docker-hosts`` has a GPU (remote ones asked there, local
    ones by this machine's nvidia-smi); None when no host was named. Where none that answered has
    one, a lookup that failed is a SandboxError, never "no GPU"."""
    hosts = pool()
    if not hosts:
        return None
    failures = []
    for host in hosts:
        try:
            if host_gpus(host) if host.remote else list_gpus():
                return True
        except SandboxError as exc:
            failures.append(str(exc))
    if failures:  # no host that answered has one, and some could not be asked
        raise SandboxError("; ".join(failures))
    return False


def _has_gpu(client: Any, remote: bool) -> bool:
    """Whether docker can pass a GPU into a container: a remote host when it lists one; a daemon
    here when this machine has one and docker has the NVIDIA runtime or the container toolkit's hook."""
    if remote:
        return bool(host_gpus(current_host()))
    if not Path("/dev/nvidia0").exists():
        return False
    runtimes = client.info().get("Runtimes", {})
    return "nvidia" in runtimes or any("nvidia" in str(r) for r in runtimes.values()) or \
        any(shutil.which(hook) for hook in _TOOLKIT_HOOKS)

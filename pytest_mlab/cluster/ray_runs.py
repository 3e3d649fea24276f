"""One run as one Ray task: placed by Ray on a node with the CPUs, memory and GPUs the run
declares, its result and run folder sent back, and a lost node turned into :class:`HostLost`.

The task runs ``function(*args, gpus=..., node=...)`` on the node: ``gpus`` are the GPU ids Ray
gave the task (``ray.get_gpu_ids()``, which Ray also puts in the task's CUDA_VISIBLE_DEVICES), and
``node`` the node's Ray id. Ray retries nothing (``max_retries=0``): a run is never repeated
behind the user's back; a lost node ends the run as ``host lost`` and --mlab-resume runs it again.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable

from pytest_mlab.cluster.ray_cluster import connect
from pytest_mlab.errors import HostLost, SandboxError

CPUS_PER_RUN = 1.0  # what a run reserves of a node's CPUs: its agent loop and commands, one at a time


@dataclass(frozen=True)
class Resources:
    """What one run holds on its node for as long as it runs (grading included)."""

    gpus: int
    memory: int  # bytes: the task's limits.memory
    cpus: float = CPUS_PER_RUN


@dataclass(frozen=True)
class NodeRun:
    """What a node sends back: the result as a dict (with the node's paths), the run folder as a
    tar archive (None when the run made none), the key that signed its result records, and the
    node's Ray id."""

    result: dict[str, Any]
    archive: bytes | None
    key: bytes
    node: str


def _on_node(function: Callable[..., Any], *args: Any) -> Any:
    """The task's body on the node: the GPUs and the node Ray gave it go to ``function``."""
    import ray

    gpus = tuple(str(gpu) for gpu in ray.get_gpu_ids())
    return function(*args, gpus=gpus, node=ray.get_runtime_context().get_node_id())


@functools.lru_cache(maxsize=None)
def _remote(address: str) -> Any:
    return connect(address).remote(max_retries=0)(_on_node)


def run_on_ray(address: str, function: Callable[..., NodeRun], args: tuple, resources: Resources) -> NodeRun:
    """``function(*args)`` run on the node Ray places it on, and what it returned. Raises HostLost
    when the node (or the way to it) died, SandboxError when the task itself failed. Ctrl-C here
    stops the task at once, ungraded (``ray.cancel(force=True)``): Ray 2.60's gentle cancel did not
    reach a task that was sleeping within 20 s here, and a run left going would keep its node's
    resources with nobody waiting for it."""
    ray = connect(address)
    task = _remote(address).options(num_cpus=resources.cpus, num_gpus=resources.gpus, memory=resources.memory)
    ref = task.remote(function, *args)
    try:
        return _get(ray, ref)
    except KeyboardInterrupt:
        ray.cancel(ref, force=True)
        raise


def _get(ray: Any, ref: Any) -> NodeRun:
    errors = ray.exceptions
    try:
        return ray.get(ref)
    except errors.TaskCancelledError:
        raise KeyboardInterrupt from None
    except errors.RayTaskError as exc:  # the harness on the node raised: not the node's loss
        raise SandboxError(f"the run failed on its Ray node: {_first_line(exc)}") from None
    except errors.RayError as exc:  # the node died, its worker was killed, or the cluster is gone
        raise HostLost(f"the Ray node running it was lost ({type(exc).__name__}: {_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else type(exc).__name__

"""This process's connection to the Ray cluster of ``--mlab-ray`` and what it asks of the cluster.

Every process that places or checks runs (each xdist worker, or the one process of ``-n 0``) is a
Ray driver of its own: it connects at its first need, once, and Ray disconnects it at exit. Ray is
imported here only, and only then, so a session without ``--mlab-ray`` never loads it.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import socket
from types import ModuleType

from pytest_mlab.errors import UsageError

AUTO = "auto"  # a cluster started on this machine with `ray start --head`
INSTALL = 'pip install -e ".[ray]"'
OPTION = "--mlab-ray"
PROBE_TIMEOUT_S = 5.0  # a head that does not accept a connection in this time is not there
_START = "start one with `ray start --head` (docs/scaling.md, Ray) or name its GCS address HOST:PORT"


def unavailable() -> str | None:
    """Why Ray cannot be used here (it is not installed, and how to install it), else None;
    asked without importing it."""
    if importlib.util.find_spec("ray") is None:
        return f"Ray places the runs, and it is not installed: {INSTALL}"
    return None


def ray_module() -> ModuleType:
    """Ray itself, or a UsageError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(f"{OPTION} places runs with Ray, which is not installed: {INSTALL}") from None
    return ray


def unreachable(address: str) -> str | None:
    """Why nothing accepts a connection at ``address`` (HOST:PORT, or ray://HOST:PORT), in a few
    seconds and without importing Ray; None when something does, or for ``auto``. Ray itself
    retries a wrong address for many minutes before it gives up."""
    if address == AUTO:
        return None
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return f"{address!r} is not an address of a Ray head: name it HOST:PORT (e.g. 10.0.0.5:6379) or auto"
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_TIMEOUT_S):
            return None
    except OSError as exc:
        return f"no Ray cluster answers at {address} ({exc.strerror or exc}); {_START}"


@functools.lru_cache(maxsize=None)
def connect(address: str) -> ModuleType:
    """Ray, connected to the cluster at ``address`` (``auto``: the one started on this machine)."""
    ray = ray_module()
    if not ray.is_initialized():
        problem = unreachable(address)
        if problem:
            raise UsageError(f"{OPTION}={address}: {problem}")
        try:
            ray.init(address=address, namespace="pytest-mlab", logging_level=logging.ERROR, log_to_driver=False,
                     include_dashboard=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise UsageError(f"{OPTION}={address}: no Ray cluster answers there ({first}); {_START}") from None
    return ray


def most_gpus_on_one_node(address: str) -> int:
    """The most GPUs any live node of the cluster has: a run holds all its GPUs on one node."""
    ray = connect(address)
    return max((int(node.get("Resources", {}).get("GPU", 0)) for node in ray.nodes() if node.get("Alive")),
               default=0)

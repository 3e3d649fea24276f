"""A real Ray cluster on this machine for the tests: a head that runs nothing and nodes with
logical GPUs, every process on loopback, every file under one temp folder of the test's own (Ray's
sockets need a short path), all of it gone after the module's tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

LOOPBACK = "127.0.0.1"
NODE_CPUS = 4
NODE_MEMORY = 64 << 30  # logical: runs reserve their task's limits.memory (4G by default)
# a lost node is noticed within a few seconds, not Ray's default half a minute
FAST_HEALTH_CHECKS = {"health_check_period_ms": 500, "health_check_failure_threshold": 4,
                      "health_check_initial_delay_ms": 0}


class RayTestCluster:
    """A ``ray.cluster_utils.Cluster`` on loopback whose nodes are told apart by their Ray id."""

    def __init__(self, folder: Path) -> None:
        from ray.cluster_utils import Cluster

        self.folder = folder
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 0, "num_gpus": 0, "node_ip_address": LOOPBACK, "include_dashboard": False,
            "temp_dir": str(folder / "ray"), "_system_config": FAST_HEALTH_CHECKS})

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_node(self, gpus: int, cpus: int = NODE_CPUS) -> Any:
        return self.cluster.add_node(num_cpus=cpus, num_gpus=gpus, memory=NODE_MEMORY, node_ip_address=LOOPBACK)

    def remove_node(self, node: Any, *, kill: bool = False) -> None:
        self.cluster.remove_node(node, allow_graceful=not kill)

    def temp_left(self) -> list[str]:
        """What is in the temp folder of the cluster's processes and sessions (TMPDIR)."""
        return sorted(entry.name for entry in (self.folder / "tmp").iterdir())

    def shutdown(self) -> None:
        self.cluster.shutdown()


LIVE_DRIVERS = """\
import logging, sys, time
import ray
from ray._private.state import jobs
ray.init(address=sys.argv[1], logging_level=logging.ERROR, log_to_driver=False)
me = ray.get_runtime_context().get_job_id()
deadline = time.monotonic() + 20  # a driver that exited is marked dead within a few seconds
while True:
    live = [job["JobID"] for job in jobs() if not job["IsDead"] and job["JobID"] != me]
    if not live or time.monotonic() > deadline:
        break
    time.sleep(0.5)
print("LIVE", len(live))
"""


def live_drivers(cluster: RayTestCluster) -> int:
    """How many drivers (sessions' processes) the cluster still counts as connected, besides the asking one."""
    asked = subprocess.run([sys.executable, "-c", LIVE_DRIVERS, cluster.address], capture_output=True, text=True,
                           timeout=120, check=False)
    line = next((line for line in asked.stdout.splitlines() if line.startswith("LIVE ")), None)
    assert line is not None, asked.stdout + asked.stderr
    return int(line.split()[1])


def node_label(node: Any) -> str:
    """What a run on ``node`` records as its host (runner.py: ``ray:`` and the id's first 12 characters)."""
    return f"ray:{node.node_id[:12]}"


def processes_naming(text: str) -> list[str]:
    """Command lines of live processes that contain ``text``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline:
            found.append(f"{pid}: {cmdline[:200]}")
    return found


def ray_cluster_fixture() -> Iterator[RayTestCluster]:
    """The body of a module-scoped fixture: the cluster, then nothing of it left (a run on a killed
    node leaves its workspace, quota mount included, which the project's own sweep removes)."""
    pytest.importorskip("ray", reason='Ray is not installed: pip install -e ".[ray]"')
    from pytest_mlab.sandbox.leftovers import sweep_temp_folders

    folder = Path(tempfile.mkdtemp(prefix="mlab-ray-test-"))
    (folder / "ray").mkdir()
    (folder / "tmp").mkdir()
    # Ray's address file too, and that of every sub-run's driver; drivers connect to 127.0.0.1 as
    # given (Ray otherwise swaps a loopback address for the machine's own); Ray's memory monitor
    # would kill runs when the machine, shared by every node here, looks full; TMPDIR: whatever the
    # runs leave in the temp folder is found in the cluster's own (RayTestCluster.temp_left)
    settings = {"RAY_TMPDIR": str(folder), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
                "RAY_memory_monitor_refresh_ms": "0", "TMPDIR": str(folder / "tmp")}
    before = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    cluster = None
    try:
        cluster = RayTestCluster(folder)
        yield cluster
    finally:
        if cluster is not None:
            cluster.shutdown()
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        left = processes_naming(str(folder))
        sweep_temp_folders(folder / "tmp")
        shutil.rmtree(folder, ignore_errors=True)
        assert not left, f"Ray processes outlived the test cluster: {left}"

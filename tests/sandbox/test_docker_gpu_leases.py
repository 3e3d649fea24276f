"""A remote docker host's GPUs held on the host itself (gpu_leases.py), on a real second daemon:
controllers on different machines (here: different lock folders, which no lock file joins) never
hand one of its GPUs to two runs, and a dead holder's GPU is taken over."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.conventions import LABEL, LEASE_LABEL, OWNER_LABEL
from pytest_mlab.sandbox.docker.gpu_leases import NAME_PREFIX, host_gpu_guard
from pytest_mlab.sandbox.docker.hosts import DockerHost
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE
from pytest_mlab.sandbox.gpus import GpuPool
from pytest_mlab.sandbox.registry import sandbox_unavailable
from tests.sandbox.docker_daemons import runtime_tarball_dir, second_daemon  # noqa: F401

REASON = sandbox_unavailable("docker")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(REASON is not None, reason=f"docker cannot run here: {REASON}")]


@pytest.fixture
def host(second_daemon: str):
    remote = DockerHost(second_daemon)
    yield remote
    for container in remote.client().containers.list(all=True, filters={"name": NAME_PREFIX}):
        container.remove(force=True)


def controller(folder: Path, host: DockerHost) -> GpuPool:
    """The pool a controller machine with its own lock folder has of ``host``'s two GPUs."""
    return GpuPool(folder / "this-machine", None, poll=0.05).on_docker_host(
        host.name, lambda: ("0", "1"), guard=host_gpu_guard(host, 60))


def holders(host: DockerHost) -> dict[str, str]:
    return {c.name: c.labels["pytest-mlab.run"]
            for c in host.client().containers.list(all=True, filters={"name": NAME_PREFIX})}


def test_two_controllers_sharing_a_host_never_hand_out_one_gpu_twice(host: DockerHost, tmp_path: Path) -> None:
    first, second = controller(tmp_path / "machine-a", host), controller(tmp_path / "machine-b", host)
    with first.lease("a0", required=False) as a0, second.lease("b0", required=False) as b0:
        assert {a0.ids, b0.ids} == {("0",), ("1",)}
        assert holders(host) == {f"{NAME_PREFIX}{a0.ids[0]}": "a0", f"{NAME_PREFIX}{b0.ids[0]}": "b0"}
        with second.lease("b1", required=False) as b1:
            assert b1.ids == ()  # machine b's lock files say GPU a0 is free: the host says no
        freed = a0.ids
        a0.close()
        with second.lease("b2", required=True, timeout=5) as b2:
            assert b2.ids == freed
    assert holders(host) == {}  # every hold let go on the host


def test_a_required_run_waits_for_a_gpu_another_controller_holds(host: DockerHost, tmp_path: Path) -> None:
    first, second = controller(tmp_path / "machine-a", host), controller(tmp_path / "machine-b", host)
    with first.lease("a0", required=True), first.lease("a1", required=True):
        started = time.monotonic()
        with pytest.raises(SandboxError, match="got none in 0.5s"):
            second.lease("b0", required=True, timeout=0.5)
        assert time.monotonic() - started >= 0.5


def _left_by(host: DockerHost, gpu: str, owner: str, lease_until: float) -> None:
    host.client().containers.create(RUNTIME_IMAGE, ["true"], name=f"{NAME_PREFIX}{gpu}", network_mode="none",
                                    labels={LABEL: "1", OWNER_LABEL: owner, LEASE_LABEL: str(int(lease_until)),
                                            "pytest-mlab.run": "gone"})


def test_a_dead_holders_gpu_is_taken_over_and_a_live_ones_is_not(host: DockerHost, tmp_path: Path) -> None:
    here = socket.gethostname()
    _left_by(host, "0", f"{here}:999999999:?", time.time() + 3600)  # a process of this machine that is gone
    _left_by(host, "1", "another-machine:4242:1", time.time() + 3600)  # another machine's, lease running
    pool = controller(tmp_path / "machine-a", host)
    with pool.lease("a0", required=False) as a0, pool.lease("a1", required=False) as a1:
        assert a0.ids == ("0",) and a1.ids == ()
    host.client().containers.get(f"{NAME_PREFIX}1").remove(force=True)
    _left_by(host, "1", "another-machine:4242:1", time.time() - 1)  # its lease ran out: that machine is gone
    with pool.lease("a0", required=False) as a0, pool.lease("a1", required=False) as a1:
        assert {a0.ids, a1.ids} == {("0",), ("1",)}

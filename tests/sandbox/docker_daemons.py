"""Second docker daemons for the remote-host tests: each listens only on a loopback TCP port, with
its own data-root and exec-root and no bridge, so it is a separate host in all but the machine.

``MLAB_TEST_DOCKER_HOST`` (CI starts one) names a daemon to use instead of starting one. A daemon
is told apart from the local one by its URL only: everything the tests assert about it (no bind
mount, data sent once, nothing left) is what a daemon on another machine would show.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

RUNTIME_TAG = "pytest-mlab/runtime:1"
START_TIMEOUT = 60.0


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Daemon:
    """A dockerd of the tests' own, started and stopped here."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_loopback_port()
        self.url = f"tcp://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        for name in ("data", "exec"):
            (self.root / name).mkdir(parents=True, exist_ok=True)
        log = open(self.root / "dockerd.log", "ab")
        self.process = subprocess.Popen(
            ["dockerd", "--bridge=none", "--iptables=false", "--ip-masq=false", "-H", self.url,
             "--data-root", str(self.root / "data"), "--exec-root", str(self.root / "exec"),
             "--pidfile", str(self.root / "dockerd.pid")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dockerd exited: {(self.root / 'dockerd.log').read_text()[-2000:]}")
            if _answers(self.url):
                return
            time.sleep(0.2)
        raise RuntimeError(f"dockerd did not answer within {START_TIMEOUT:.0f}s")

    def kill(self) -> None:
        """Gone at once, as a machine that dies: the daemon and everything it started."""
        if self.process is not None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:  # gone already
                pass
            self.process.wait()
        for pid in [*_processes_under(self.root), *_container_processes(self.root / "data" / "containers")]:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _unmount_under(self.root)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            self.kill()
            return
        try:
            import docker

            client = docker.DockerClient(base_url=self.url, timeout=60)
            for container in client.containers.list(all=True):
                container.remove(force=True, v=True)
        except Exception:
            pass
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self.kill()  # shims of killed containers


def _unmount_under(root: Path) -> None:
    """The daemon's own mounts (its data root, shared, and its containers' layers) go with it: a
    killed daemon leaves them, the folder cannot be removed, and every later bwrap start copies
    them (and races with their changes)."""
    prefix = str(root) + os.sep
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")  # mountinfo escapes spaces as \040
        if point.startswith(prefix):
            points.append(point)
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


def _answers(url: str) -> bool:
    import docker

    try:
        docker.DockerClient(base_url=url, timeout=5).ping()
        return True
    except Exception:
        return False


def _processes_under(root: Path) -> list[int]:
    """Processes whose command line names the daemon's folders (its containerd and shims)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if str(root).encode() in command:
            found.append(int(entry.name))
    return found


def _container_processes(containers: Path) -> list[int]:
    """What runs in the daemon's containers, from their cgroups (v1 and v2 layouts)."""
    found = []
    for container in containers.glob("*") if containers.is_dir() else []:
        for procs in (f"/sys/fs/cgroup/pids/docker/{container.name}/cgroup.procs",
                      f"/sys/fs/cgroup/docker/{container.name}/cgroup.procs",
                      f"/sys/fs/cgroup/system.slice/docker-{container.name}.scope/cgroup.procs"):
            try:
                found.extend(int(line) for line in Path(procs).read_text().split())
            except (OSError, ValueError):
                continue
    return found


def cannot_start_reason() -> str | None:
    if os.environ.get("MLAB_TEST_DOCKER_HOST"):
        return None
    if os.getuid() != 0:
        return "starting a second docker daemon needs root (or set MLAB_TEST_DOCKER_HOST)"
    if shutil.which("dockerd") is None:
        return "dockerd is not installed (apt-get install docker.io)"
    return None


def import_runtime(url: str, workdir: Path) -> None:
    """A stdlib-only runtime image made from this machine's Python, imported onto the host once."""
    import docker

    client = docker.DockerClient(base_url=url, timeout=600)
    try:
        client.images.get(RUNTIME_TAG)
        return
    except docker.errors.ImageNotFound:
        pass
    from pytest_mlab.sandbox.docker.runtime_tarball import import_runtime_image, write_runtime_tarball

    tarball = workdir / "runtime.tar"
    if not tarball.exists():
        write_runtime_tarball(tarball, site_packages=False)
    import_runtime_image(client, tarball, RUNTIME_TAG)


@pytest.fixture(scope="session")
def runtime_tarball_dir() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="mlab-test-runtime-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def second_daemon(runtime_tarball_dir: Path) -> Iterator[str]:
    """The URL of a loopback daemon holding the runtime image, for the whole test session."""
    reason = cannot_start_reason()
    if reason:
        pytest.skip(reason)
    url = os.environ.get("MLAB_TEST_DOCKER_HOST")
    daemon = None
    if not url:
        daemon = Daemon(Path(tempfile.mkdtemp(prefix="mlab-test-dockerd-")))
        daemon.start()
        url = daemon.url
    import_runtime(url, runtime_tarball_dir)
    yield url
    if daemon is not None:
        daemon.stop()
        shutil.rmtree(daemon.root, ignore_errors=True)


@pytest.fixture
def doomed_daemon(runtime_tarball_dir: Path) -> Iterator[Daemon]:
    """A daemon of this test's own, which the test may kill."""
    reason = cannot_start_reason() if not os.environ.get("MLAB_TEST_DOCKER_HOST") else (
        None if os.getuid() == 0 and shutil.which("dockerd") else "a daemon to kill needs root and dockerd")
    if reason:
        pytest.skip(reason)
    daemon = Daemon(Path(tempfile.mkdtemp(prefix="mlab-test-dockerd-")))
    daemon.start()
    import_runtime(daemon.url, runtime_tarball_dir)
    yield daemon
    daemon.stop()
    shutil.rmtree(daemon.root, ignore_errors=True)

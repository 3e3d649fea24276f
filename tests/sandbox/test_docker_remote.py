"""The docker backend on a remote daemon: nothing bind-mounted, the workspace moved by archive both
ways, data sent once per host into a read-only volume, and the attacks an agent could try on
that traffic. The "remote" daemon is a second dockerd on a loopback port (tests/sandbox/docker_daemons.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_mlab.errors import HostLost
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.sandbox.docker import hosts as docker_hosts
from pytest_mlab.sandbox.docker.hosts import parse_hosts, use_pool
from pytest_mlab.sandbox.registry import sandbox_unavailable
from tests.sandbox.docker_daemons import doomed_daemon, runtime_tarball_dir, second_daemon  # noqa: F401

REASON = sandbox_unavailable("docker")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(REASON is not None, reason=f"docker cannot run here: {REASON}")]
LIMIT = 100_000


@pytest.fixture
def on_host(monkeypatch):
    """Point this process's docker sandboxes at a host, as a worker of a --mlab-docker-hosts session."""

    def point(url: str, session: str = "remote-tests") -> None:
        use_pool(parse_hosts(url), None, session)

    monkeypatch.setattr(docker_hosts, "_pool", ())
    yield point
    from pytest_mlab.sandbox.docker.leftovers import remove_leftovers

    if docker_hosts.pool() and docker_hosts.host_answers(docker_hosts.pool()[0].client()):
        remove_leftovers()  # the session's data volumes, as its controller removes them at its end
    use_pool((), None, "")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "cache" / "public"
    (folder / "images").mkdir(parents=True)
    (folder / "train.csv").write_text("a,b\n1,2\n")
    (folder / "images" / "0.bin").write_bytes(os.urandom(4096))
    return folder


def _populate(box, data: Path) -> None:
    for file in sorted(p for p in data.rglob("*") if p.is_file()):
        box.copy_in(file, file.relative_to(data).as_posix(), link=True)


def _run(box, code: str):
    box.write("step.py", code.encode())
    result = box.exec([box.python, "step.py"], timeout=60, output_limit=LIMIT)
    assert result.returncode == 0, result.stderr
    return result


def test_a_remote_sandbox_mounts_nothing_of_this_machine(on_host, second_daemon, data):
    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-mounts")) as box:
        assert type(box).__name__ == "RemoteDockerSandbox" and box.host.url == second_daemon
        _populate(box, data)
        _run(box, "print(open('train.csv').read())")
        mounts = box._container.attrs["Mounts"]
        assert mounts and all(mount["Type"] == "volume" for mount in mounts), mounts
        assert {mount["Destination"] for mount in mounts} == {"/tmp", "/mlab/data"}
        data_mount = next(mount for mount in mounts if mount["Destination"] == "/mlab/data")
        assert data_mount["RW"] is False


def test_the_workspace_travels_both_ways(on_host, second_daemon, data):
    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-round-trip")) as box:
        _populate(box, data)
        box.write("notes/plan.txt", b"from the harness")
        result = _run(box, textwrap_dedent("""
            import os
            print(open('notes/plan.txt').read())
            os.makedirs('out/deep', exist_ok=True)
            open('out/deep/model.pt', 'wb').write(b'w' * 100000)
            open('submission.csv', 'w').write('id,y\\n1,2\\n')
            os.symlink('submission.csv', 'latest.csv')
            os.mkfifo('pipe')
            for index in range(40):  # enough changes for one archive of the whole workspace
                open(f'many-{index}.txt', 'w').write(str(index))
            os.link('submission.csv', 'second-name.csv')
        """))
        assert "from the harness" in result.stdout
        assert box.read("out/deep/model.pt") == b"w" * 100000
        assert box.read("submission.csv") == b"id,y\n1,2\n"
        assert os.readlink(box.workspace / "latest.csv") == "submission.csv"
        assert not (box.workspace / "pipe").exists()  # no special files on the harness's side
        assert box.read("many-39.txt") == b"39" and box.read("second-name.csv") == b"id,y\n1,2\n"
        _run(box, "import os, shutil; os.remove('submission.csv'); shutil.rmtree('out'); os.remove('notes/plan.txt')")
        assert not (box.workspace / "submission.csv").exists() and not (box.workspace / "out").exists()
        assert sorted(os.listdir(box.workspace / "notes")) == []
        assert box.exec(["true"], timeout=30, output_limit=LIMIT).cpu_time is not None


def test_a_file_sent_to_the_container_is_read_once(on_host, second_daemon, monkeypatch):
    """Sending a file and recording what the container holds (its digest, to tell later whether
    the agent changed it) is one read of the file, not two."""
    import builtins

    from pytest_mlab.sandbox.docker import remote

    on_host(second_daemon)
    body = os.urandom(300_000)
    read = []

    def counting_open(path, mode="r", *args, **kwargs):
        handle = builtins.open(path, mode, *args, **kwargs)
        return _Counted(handle, read) if str(path).endswith("weights.bin") else handle

    with open_sandbox("docker", options=SandboxOptions(label="remote-read-once")) as box:
        box.write("weights.bin", body)
        monkeypatch.setattr(remote, "open", counting_open, raising=False)
        _run(box, "print(len(open('weights.bin', 'rb').read()))")
        assert sum(read) == len(body)
        assert box.read("weights.bin") == body


class _Counted:
    """A file that counts the bytes read from it (``read``, ``readinto``) in ``counts``."""

    def __init__(self, handle, counts: list) -> None:
        self._handle, self._counts = handle, counts

    def read(self, size=-1):
        data = self._handle.read(size)
        self._counts.append(len(data))
        return data

    def readinto(self, buffer):
        count = self._handle.readinto(buffer)
        self._counts.append(count or 0)
        return count

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


def test_data_is_read_only_and_replacing_it_never_reaches_the_cache(on_host, second_daemon, data):
    on_host(second_daemon)
    original = (data / "train.csv").read_bytes()
    with open_sandbox("docker", options=SandboxOptions(label="remote-data")) as box:
        _populate(box, data)
        result = _run(box, textwrap_dedent("""
            import os
            try:
                open('train.csv', 'a').write('forged')
            except OSError as exc:
                print('refused', exc.errno)
            os.remove('train.csv')
            open('train.csv', 'w').write('mine')
            print(open('images/0.bin', 'rb').read() == open('/mlab/data/images/0.bin', 'rb').read())
        """))
        assert "refused" in result.stdout and "True" in result.stdout
        assert box.read("train.csv") == b"mine"
    assert (data / "train.csv").read_bytes() == original


def test_the_same_data_goes_to_a_host_once(on_host, second_daemon, data):
    on_host(second_daemon, session="remote-data-once")
    sent = []
    try:
        for label in ("once-a", "once-b"):
            with open_sandbox("docker", options=SandboxOptions(label=label)) as box:
                _populate(box, data)
                _run(box, "print(len(open('images/0.bin', 'rb').read()))")
                sent.append(box.data_sent)
    finally:
        from pytest_mlab.sandbox.docker.leftovers import remove_leftovers

        removed = remove_leftovers()
    assert sent[0] >= 4096 and sent[1] == 0
    assert any(name.startswith("mlab-data-") for name in removed)  # the session's own volume, swept


def test_a_link_the_agent_made_never_leads_the_harness_outside(on_host, second_daemon, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-links")) as box:
        _run(box, f"import os; os.makedirs('d'); open('d/x', 'w').write('1')")
        _run(box, f"import os, shutil; shutil.rmtree('d'); os.symlink({str(outside)!r}, 'd'); "
                  "os.makedirs('e'); open('e/y', 'w').write('2')")
        assert os.readlink(box.workspace / "d") == str(outside)
        _run(box, "import os; os.remove('d'); os.makedirs('d'); open('d/z', 'w').write('3')")
        assert box.read("d/z") == b"3"
    assert list(outside.iterdir()) == []


def test_a_host_that_dies_is_an_infrastructure_failure(on_host, doomed_daemon):
    on_host(doomed_daemon.url)
    with open_sandbox("docker", options=SandboxOptions(label="remote-dies")) as box:
        box.exec(["true"], timeout=30, output_limit=LIMIT)
        doomed_daemon.kill()
        with pytest.raises(HostLost, match="stopped answering"):
            box.exec(["true"], timeout=30, output_limit=LIMIT)


def textwrap_dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).lstrip()


def test_clean_hosts_removes_what_a_killed_process_left_on_each_host(second_daemon, data, tmp_path, capsys):
    import subprocess
    import sys

    from pytest_mlab.cli import main

    code = textwrap_dedent(f"""
        import os
        from pathlib import Path
        from pytest_mlab.sandbox.docker.hosts import parse_hosts, use_pool
        from pytest_mlab.sandbox import SandboxOptions, open_sandbox
        use_pool(parse_hosts({second_daemon!r}), None, "killed-session")
        box = open_sandbox("docker", options=SandboxOptions(label="orphan-remote"))
        box.copy_in(Path({str(data / 'train.csv')!r}), "train.csv", link=True)
        box.exec(["true"], timeout=60, output_limit=100)
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    import docker

    remote = docker.DockerClient(base_url=second_daemon)
    assert remote.containers.list(all=True, filters={"label": "pytest-mlab.run=orphan-remote"})
    assert main(["clean", "--hosts", f"{second_daemon},tcp://127.0.0.1:1"]) == 0
    printed = capsys.readouterr().out
    assert f"docker host {second_daemon}: removed" in printed and "mlab-data-" in printed
    assert "docker host tcp://127.0.0.1:1: not checked" in printed
    assert remote.containers.list(all=True, filters={"label": "pytest-mlab.run=orphan-remote"}) == []
    assert remote.volumes.list(filters={"label": "pytest-mlab.session=killed-session"}) == []


def test_a_change_hidden_behind_an_old_mtime_still_comes_back(on_host, second_daemon):
    """Size and mtime can be set back by the agent; ctime cannot, so the listing still sees the change."""
    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-mtime")) as box:
        _run(box, "open('submission.csv', 'w').write('aaaa')")
        _run(box, "import os; info = os.stat('submission.csv'); open('submission.csv', 'w').write('bbbb'); "
                  "os.utime('submission.csv', ns=(info.st_atime_ns, info.st_mtime_ns))")
        assert box.read("submission.csv") == b"bbbb"


def test_a_remote_host_without_the_image_says_how_to_get_it(on_host, second_daemon):
    from pytest_mlab.errors import SandboxError

    on_host(second_daemon)
    with pytest.raises(SandboxError, match="not on the host tcp://.*build or load it there"):
        open_sandbox("docker", options=SandboxOptions(label="remote-no-image", image="no-such/image:0"))


# -- transfers: names as bytes, holes, the disk quota, only what changed, unreadable folders ------------


@pytest.fixture
def fetched(monkeypatch):
    """The names the harness writes from the container, as it writes them."""
    from pytest_mlab.sandbox.docker.remote import RemoteDockerSandbox

    names: list[str] = []
    real = RemoteDockerSandbox._place_file

    def spy(self, file, body):
        names.append(file.name)
        real(self, file, body)

    monkeypatch.setattr(RemoteDockerSandbox, "_place_file", spy)
    return names


def test_a_name_that_is_not_utf8_moves_both_ways_and_later_steps_work(on_host, second_daemon):
    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-bytes")) as box:
        _run(box, "import os; os.makedirs(b'd\\xff'); open(b'd\\xff/caf\\xe9.txt', 'wb').write(b'x'); "
                  "open(b'top\\xfe', 'wb').write(b'y'); os.symlink(b'top\\xfe', b'link\\xfd')")
        root = os.fsencode(box.workspace)
        assert open(root + b"/d\xff/caf\xe9.txt", "rb").read() == b"x"
        assert os.readlink(root + b"/link\xfd") == b"top\xfe"
        _run(box, "import os; os.remove(b'top\\xfe')")
        assert not os.path.lexists(root + b"/top\xfe")
        os.remove(root + b"/d\xff/caf\xe9.txt")  # the harness deletes one: the container loses it too
        assert "[]" in _run(box, "import os; print(os.listdir(b'd\\xff'))").stdout


def test_a_sparse_file_arrives_sparse(on_host, second_daemon):
    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-sparse")) as box:
        _run(box, "f = open('sparse.bin', 'wb'); f.seek(1 << 30); f.write(b'middle'); f.truncate(2 << 30)")
        info = os.stat(box.workspace / "sparse.bin")
        assert info.st_size == 2 << 30 and info.st_blocks * 512 < 1 << 20
        with open(box.workspace / "sparse.bin", "rb") as handle:
            handle.seek(1 << 30)
            assert handle.read(6) == b"middle"


def test_the_disk_quota_is_checked_before_the_harness_writes(on_host, second_daemon):
    from pytest_mlab.errors import WorkspaceOverLimits

    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-quota", disk=1 << 20)) as box:
        _run(box, "import os\nfor index in range(3):\n    open(f'part{index}', 'wb').write(os.urandom(600 << 10))")
        assert not any((box.workspace / f"part{index}").exists() for index in range(3))
        with pytest.raises(WorkspaceOverLimits, match="disk quota of 1 MiB.*limits.disk"):
            box.sync_out()


def test_only_what_changed_moves_whatever_the_number(on_host, second_daemon, fetched):
    from tests.sandbox.tcp_proxy import Relay

    relay = Relay(second_daemon)
    try:
        on_host(relay.url)
        with open_sandbox("docker", options=SandboxOptions(label="remote-changed")) as box:
            _run(box, "open('big.bin', 'wb').write(b'b' * (4 << 20))")
            fetched.clear()
            before = relay.counts()
            _run(box, "for index in range(200):\n    open(f'small-{index}.txt', 'w').write(str(index))")
            moved = sum(relay.counts()) - sum(before)
            assert sorted(fetched) == sorted(f"small-{index}.txt" for index in range(200))  # not big.bin, not step.py
            assert moved < 1 << 20, moved
            fetched.clear()
            _run(box, "pass")
            assert fetched == []
            _run(box, "open(__file__, 'a').write('# changed by the command')")  # the harness's script, changed
            assert fetched == ["step.py"] and box.read("step.py").endswith(b"# changed by the command")
    finally:
        relay.close()


def test_an_unreadable_folder_is_reported_not_a_reason_to_move_everything(on_host, second_daemon, fetched):
    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-unreadable")) as box:
        _run(box, "import os; os.makedirs('locked'); open('locked/a', 'w').write('1'); "
                  "open('big.bin', 'wb').write(b'b' * (1 << 20))")
        result = _run(box, "import os; os.chmod('locked', 0)")
        assert "cannot read 'locked'" in result.stderr
        assert box.read("locked/a") == b"1"  # kept as it was
        fetched.clear()
        again = _run(box, "pass")
        assert fetched == [] and "cannot read" not in again.stderr  # said once, nothing moved
        _run(box, "import os; os.chmod('locked', 0o755); open('locked/b', 'w').write('2')")
        assert box.read("locked/b") == b"2"


def test_the_tmp_volume_is_made_with_nocopy_and_open_to_all(on_host, second_daemon):
    on_host(second_daemon)
    with open_sandbox("docker", options=SandboxOptions(label="remote-nocopy")) as box:
        result = _run(box, "import os, stat; print(oct(stat.S_IMODE(os.stat('/tmp').st_mode)))")
        tmp = next(mount for mount in box._container.attrs["HostConfig"]["Mounts"] if mount["Target"] == "/tmp")
        assert tmp["VolumeOptions"]["NoCopy"] is True
        assert "0o1777" in result.stdout


def test_a_host_that_hangs_is_lost_within_a_minute(on_host, second_daemon):
    """A liveness bound, not a speed measurement: the old 300 s per call would blow far past it."""
    import threading

    import docker

    from tests.sandbox.tcp_proxy import Relay

    relay = Relay(second_daemon)
    outcome: list[BaseException] = []
    try:
        on_host(relay.url)
        box = open_sandbox("docker", options=SandboxOptions(label="remote-hangs"))
        _run(box, "pass")
        relay.hang()

        def step() -> None:
            try:
                _run(box, "print('never')")
            except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
                outcome.append(exc)

        worker = threading.Thread(target=step, daemon=True)
        worker.start()
        worker.join(60)
        assert outcome and isinstance(outcome[0], HostLost), outcome or "still blocked after 60 s"
    finally:
        relay.close()
        remote = docker.DockerClient(base_url=second_daemon)
        for container in remote.containers.list(all=True, filters={"label": "pytest-mlab.run=remote-hangs"}):
            container.remove(force=True, v=True)


def test_clean_sweeps_what_a_dead_controller_machine_left_once_its_lease_ran_out(second_daemon, capsys):
    import time

    import docker

    from pytest_mlab.cli import main
    from pytest_mlab.sandbox.docker.conventions import LABEL, LEASE_LABEL, OWNER_LABEL
    from pytest_mlab.sandbox.docker.data_volumes import DATA_LABEL, SESSION_LABEL
    from tests.sandbox.docker_daemons import RUNTIME_TAG

    remote = docker.DockerClient(base_url=second_daemon)
    past, future = str(int(time.time()) - 60), str(int(time.time()) + 3600)
    made = []
    for name, lease in (("gone", past), ("live", future)):
        labels = {LABEL: "1", OWNER_LABEL: f"{name}-controller:4242:99", LEASE_LABEL: lease}
        remote.volumes.create(f"mlab-data-{name}-machine", labels={**labels, DATA_LABEL: "x", SESSION_LABEL: name})
        made.append(remote.containers.create(RUNTIME_TAG, ["true"], name=f"mlab-{name}-machine", labels=labels))
    try:
        assert main(["clean", "--hosts", second_daemon]) == 0  # not --all
        printed = capsys.readouterr().out
        assert "mlab-gone-machine" in printed and "mlab-data-gone-machine" in printed and "live" not in printed
        assert [c.name for c in remote.containers.list(all=True, filters={"label": LABEL})
                if c.name.endswith("machine")] == ["mlab-live-machine"]
        assert [v.name for v in remote.volumes.list(filters={"label": DATA_LABEL})
                if v.name.endswith("machine")] == ["mlab-data-live-machine"]
    finally:
        for container in made:
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass
        for volume in remote.volumes.list(filters={"label": DATA_LABEL}):
            if volume.name.endswith("machine"):
                volume.remove(force=True)

"""Real sessions over two docker hosts (``--mlab-docker-hosts``): the local daemon and a loopback one
treated as remote. Items spread over both, data goes to the remote host once, nothing is left on
either, no container there bind-mounts anything, and a host that dies mid-run costs only the item
it ran, as an infrastructure failure that --mlab-resume runs again.
"""

from __future__ import annotations

import textwrap
import threading
import time
from pathlib import Path

import pytest

from pytest_mlab.sandbox.registry import sandbox_unavailable
from pytest_mlab.trace import read_trace
from tests.helpers import copy_toy_project, read_results, run_specs
from tests.sandbox.docker_daemons import doomed_daemon, runtime_tarball_dir, second_daemon  # noqa: F401

REASON = sandbox_unavailable("docker")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(REASON is not None, reason=f"docker cannot run here: {REASON}")]
LOCAL = "unix:///var/run/docker.sock"


def _client(url: str):
    import docker

    return docker.DockerClient(base_url=url, timeout=60)


class Watcher:
    """Looks at a host's pytest-mlab containers while a session runs: what each mounts, and the
    data volumes removed (docker's own event stream). A data volume is filled once, when created,
    and removed only at the session's end or before it is filled again, so one removal per data
    means it was sent once (docker reports "create" each time a container names a volume)."""

    def __init__(self, url: str) -> None:
        self.client, self.mounts, self.stop = _client(url), {}, threading.Event()
        self.volumes: set[str] = set()  # volumes the toy runs' containers mounted
        self.since = int(time.time()) - 1
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.stop.is_set():
            try:
                for container in self.client.containers.list(all=True, filters={"label": "pytest-mlab"}):
                    mounts = container.attrs.get("Mounts", [])
                    self.mounts[container.id] = [mount["Type"] for mount in mounts]
                    if container.labels.get("pytest-mlab.run", "").startswith("toy"):  # this test's runs
                        self.volumes.update(mount["Name"] for mount in mounts if mount.get("Name"))
            except Exception:
                pass
            time.sleep(0.2)

    def finish(self) -> list[dict]:
        self.stop.set()
        self.thread.join()
        events = self.client.events(since=self.since, until=int(time.time()) + 1, decode=True,
                                    filters={"type": "volume", "event": "destroy"})
        return [event for event in events if event["Actor"]["ID"].startswith("mlab-data-")]


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    return copy_toy_project(pytester.path)


def test_a_two_host_pool_spreads_items_and_leaves_nothing(pytester, project, second_daemon):
    before = {volume.name for volume in _client(second_daemon).volumes.list()}
    watcher = Watcher(second_daemon)
    result = run_specs(pytester, "-n", "2", "--sandbox=docker", f"--mlab-docker-hosts={LOCAL},{second_daemon}",
                       "--seeds=2", cache_dir=project / ".cache", subprocess=True)
    removed = watcher.finish()
    result.assert_outcomes(passed=4)
    runs = read_results(project)["runs"]
    assert {run["host"] for run in runs} == {LOCAL, second_daemon}
    # the sandboxes' containers mount volumes only (the GPU probe's mounts nothing)
    assert any(watcher.mounts.values()) and all("bind" not in types for types in watcher.mounts.values()), \
        watcher.mounts
    # the toy data, sent to the remote host once for all its items: its volume is removed once (other
    # tests on the same daemon, running beside this one, remove volumes of their own data, once each)
    names = [event["Actor"]["ID"] for event in removed]
    assert names and len(names) == len(set(names)), removed
    remote = _client(second_daemon)  # other tests, running beside this one, may have their own there
    left = remote.containers.list(all=True, filters={"label": "pytest-mlab"}, ignore_removed=True)
    assert [c.name for c in left if c.labels.get("pytest-mlab.run", "").startswith("toy")] == []
    assert watcher.volumes and not watcher.volumes & ({volume.name for volume in remote.volumes.list()} - before)
    local = _client(LOCAL).containers.list(all=True, filters={"label": "pytest-mlab"}, ignore_removed=True)
    assert [c.name for c in local if c.labels.get("pytest-mlab.run", "").startswith("toy")] == []  # other tests' are theirs


def test_a_host_that_dies_mid_run_fails_only_its_item_and_resume_completes_it(pytester, project, doomed_daemon):
    (project / "sleeper.py").write_text(textwrap.dedent("""
        from pytest_mlab.agents import Agent

        class Sleeper(Agent):
            def run(self, env):
                env.step("Write File", {"file_name": "slow.py", "content":
                         "import time\\ntime.sleep(8)\\nopen('submission.txt', 'w').write('100')\\n"})
                env.step("Execute Script", {"script_name": "slow.py"})
                env.step("Final Answer", {"final_answer": "done"})
        """))
    (project / "agents" / "sleeper.yaml").write_text(
        "kind: Agent\nname: sleeper\nimplementation: sleeper:Sleeper\n"
        "actions: [Write File, Execute Script, Final Answer]\n")
    (project / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    hosts = f"--mlab-docker-hosts={LOCAL},{doomed_daemon.url}"
    killer = threading.Thread(target=_kill_when_busy, args=(doomed_daemon,), daemon=True)
    killer.start()
    result = run_specs(pytester, "-n", "2", "--sandbox=docker", hosts, "--agent=sleeper", "--seeds=2",
                       cache_dir=project / ".cache", subprocess=True)
    killer.join(timeout=5)
    result.assert_outcomes(passed=1, failed=1)
    runs = {run["host"]: run for run in read_results(project)["runs"]}
    lost = runs[doomed_daemon.url]
    assert lost["infrastructure"] and lost["end_reason"] == "host lost", lost
    assert "stopped answering" in str(lost)
    assert runs[LOCAL]["passed"]
    steps = [record["action"] for record in read_trace(project / lost["trace"]) if record["type"] == "step"]
    assert steps[:1] == ["Write File"], "the trace keeps the steps made before the host died"

    doomed_daemon.start()  # back, as after a reboot
    again = run_specs(pytester, "-n", "2", "--sandbox=docker", hosts, "--agent=sleeper", "--seeds=2",
                      "--mlab-resume", cache_dir=project / ".cache", subprocess=True)
    again.assert_outcomes(passed=2)
    final = read_results(project)["runs"]
    assert all(run["passed"] for run in final) and sum(1 for run in final if run.get("resumed")) == 1


def _kill_when_busy(daemon) -> None:
    """Kill the daemon once one of its containers has been running a few seconds (mid-command)."""
    client = _client(daemon.url)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        try:
            running = client.containers.list(filters={"label": "pytest-mlab", "status": "running"})
        except Exception:
            return
        if running:
            time.sleep(3)
            daemon.kill()
            return
        time.sleep(0.2)

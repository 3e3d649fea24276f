"""The docker backend: isolation probes, limits, clear errors and no container left behind.

Observations equal to the local backend's are checked by tests/sandbox/test_conformance.py; these
tests probe what only an isolating backend promises. They skip only when docker cannot run here.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.sandbox.registry import sandbox_unavailable
from tests.helpers import copy_toy_project, read_results, run_specs

REASON = sandbox_unavailable("docker")
# every test here starts containers: the slow tier (still in CI), as every test on the docker backend
pytestmark = [pytest.mark.skipif(REASON is not None, reason=f"docker cannot run here: {REASON}"), pytest.mark.slow]


def mlab_containers(**labels: str) -> list:
    from pytest_mlab.sandbox.docker.conventions import LABEL
    from pytest_mlab.sandbox.docker.daemon import connect

    filters = [LABEL, *(f"{key}={value}" for key, value in labels.items())]
    return connect().containers.list(all=True, filters={"label": filters}, ignore_removed=True)


@pytest.fixture
def sandbox():
    with open_sandbox("docker", options=SandboxOptions(memory=256 << 20, pids=64, label="probe")) as box:
        yield box


def run_python(box, code: str, timeout: float = 30, **kwargs):
    box.write("probe.py", textwrap.dedent(code).encode())
    return box.exec([box.python, "probe.py"], timeout=timeout, output_limit=100_000, **kwargs)


def test_commands_run_as_a_non_root_user_with_no_api_keys(sandbox, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    result = run_python(sandbox, "import os; print(os.getuid(), os.getcwd(), sorted(os.environ))")
    assert result.returncode == 0, result.stderr
    uid, cwd, names = result.stdout.split(" ", 2)
    assert uid != "0" and cwd == str(sandbox.workspace)
    assert "OPENAI_API_KEY" not in names and "HOME" in names


def test_no_network_even_to_the_harness(sandbox):
    server = socket.socket()
    server.bind(("0.0.0.0", 0))
    server.listen()
    port = server.getsockname()[1]
    hosts = ["127.0.0.1", socket.gethostbyname(socket.gethostname())]
    try:
        result = run_python(sandbox, f"""
            import socket
            for host in {hosts!r}:
                try:
                    socket.create_connection((host, {port}), timeout=3)
                    print(host, "connected")
                except OSError as exc:
                    print(host, "failed", type(exc).__name__)
            """)
    finally:
        server.close()
    assert result.returncode == 0, result.stderr
    assert "connected" not in result.stdout and result.stdout.count("failed") == len(hosts)


def test_a_memory_hog_is_killed_and_reported(sandbox):
    result = run_python(sandbox, "block = bytearray(1 << 30); print('survived')")
    assert result.returncode == -9 and "survived" not in result.stdout
    assert "memory limit (256 MiB) was reached" in result.stderr
    assert run_python(sandbox, "print('next')").stdout == "next\n"  # the sandbox still works
    assert "memory limit" not in run_python(sandbox, "print(1)").stderr  # and reports only new kills


def test_a_fork_bomb_is_contained_by_the_pids_limit(sandbox):
    result = run_python(sandbox, """
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """, timeout=5)
    assert result.timed_out
    after = sandbox.exec(["/bin/sh", "-c", "ls /proc | grep -c '^[0-9]'"], timeout=30, output_limit=1000)
    assert after.returncode == 0 and int(after.stdout) <= 5  # init, sleep, the shell, grep, ls


def test_a_background_process_does_not_survive_its_command(sandbox):
    started = run_python(sandbox, """
        import subprocess
        subprocess.Popen(["sleep", "300"], start_new_session=True)
        print("started")
        """)
    assert started.stdout == "started\n"
    listing = sandbox.exec(["/bin/sh", "-c", "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"], timeout=30, output_limit=10_000)
    assert "sleep 300" not in listing.stdout and "sleep infinity" in listing.stdout


def test_writes_outside_the_workspace_and_into_linked_data_fail(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "data.csv").write_text("id,value\n1,10\n")
    secret = tmp_path / "hidden" / "answers.csv"
    secret.parent.mkdir()
    secret.write_text("id,value\n1,42\n")
    with open_sandbox("docker", options=SandboxOptions(label="probe")) as box:
        box.copy_in(cache / "data.csv", "data.csv", link=True)
        result = run_python(box, f"""
            import os
            for path in ["/etc/passwd", "/usr/x", "/x", "{sys.prefix}/x", "data.csv"]:
                try:
                    open(path, "a").write("pwned")
                    print(path, "written")
                except OSError as exc:
                    print(path, "refused", type(exc).__name__)
            print("answers visible:", os.path.exists("{secret}"), os.path.exists("{cache}"))
            open("mine.txt", "w").write("ok")
            """)
        assert result.returncode == 0, result.stderr
        assert "written" not in result.stdout and result.stdout.count("refused") == 5
        assert "answers visible: False False" in result.stdout
        assert box.read("mine.txt") == b"ok"
    assert (cache / "data.csv").read_text() == "id,value\n1,10\n"


@pytest.mark.skipif(os.getuid() != 0, reason="data is linked (not copied) into docker workspaces only as root")
def test_linked_data_moved_by_the_agent_stays_out_of_its_reach(tmp_path):
    """The sandbox user may rename a linked file in its workspace; it must stay the harness
    user's under its new name, or the next command could write through it into the cache. (Under
    the quota's overlay, as root, the rename makes a copy in the upper layer: writing it cannot
    reach the cache either.)"""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "data.csv").write_text("id,value\n1,10\n")
    with open_sandbox("docker", options=SandboxOptions(label="probe")) as box:
        box.copy_in(cache / "data.csv", "data.csv", link=True)
        assert (box.workspace / "data.csv").stat().st_ino == (cache / "data.csv").stat().st_ino
        moved = run_python(box, "import os; os.rename('data.csv', 'moved.csv'); print('moved')")
        assert moved.stdout == "moved\n", moved.stderr
        result = run_python(box, """
            try:
                open("moved.csv", "a").write("pwned")
                print("written")
            except OSError as exc:
                print("refused", type(exc).__name__)
            """)
        if box.quota_enforced != "file system":
            assert result.stdout.startswith("refused"), result.stdout + result.stderr
        # under the quota's overlay the rename copied the file up: the write lands on the copy
    assert (cache / "data.csv").read_text() == "id,value\n1,10\n"


def test_the_container_is_labelled_and_removed_at_close():
    box = open_sandbox("docker", options=SandboxOptions(label="labelled-run"))
    box.exec(["/bin/true"], timeout=30, output_limit=100)
    from pytest_mlab.sandbox.docker.conventions import OWNER_LABEL

    [container] = mlab_containers(**{"pytest-mlab.run": "labelled-run", OWNER_LABEL: _my_owner()})
    assert container.attrs["HostConfig"]["NetworkMode"] == "none"
    assert not container.attrs["HostConfig"]["Privileged"] and container.attrs["HostConfig"]["ReadonlyRootfs"]
    box.close()
    assert mlab_containers(**{"pytest-mlab.run": "labelled-run", OWNER_LABEL: _my_owner()}) == []


def _my_owner() -> str:
    from pytest_mlab.sandbox.owner import owner_label

    return owner_label()


def _leave_orphan(label: str) -> None:
    """A process that dies without closing its sandbox, so its container stays behind."""
    code = ("import os; from pytest_mlab.sandbox import open_sandbox, SandboxOptions\n"
            f"box = open_sandbox('docker', options=SandboxOptions(label={label!r}))\n"
            "box.exec(['/bin/true'], timeout=30, output_limit=100)\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert mlab_containers(**{"pytest-mlab.run": label})


def test_leftovers_of_a_dead_process_are_removed_and_live_ones_kept():
    """A process that dies without closing its sandbox leaves a container; clean-up removes only
    containers whose creator is gone."""
    from pytest_mlab.sandbox.docker.conventions import OWNER_LABEL
    from pytest_mlab.sandbox.docker.leftovers import remove_leftovers

    _leave_orphan("orphan-probe")
    assert len(mlab_containers(**{"pytest-mlab.run": "orphan-probe"})) >= 1
    with open_sandbox("docker", options=SandboxOptions(label="live-probe")) as live:
        live.exec(["/bin/true"], timeout=30, output_limit=100)
        removed = remove_leftovers()
        assert mlab_containers(**{"pytest-mlab.run": "orphan-probe"}) == []
        assert removed and mlab_containers(**{"pytest-mlab.run": "live-probe", OWNER_LABEL: _my_owner()})


def test_the_registry_removes_a_dead_process_container_and_says_when_the_daemon_is_down(monkeypatch):
    from pytest_mlab.sandbox.docker import daemon
    from pytest_mlab.sandbox.registry import remove_leftovers

    _leave_orphan("registry-probe")
    [removed] = remove_leftovers("docker").backends
    assert removed.kind == "docker" and removed.names and removed.unchecked is None
    assert mlab_containers(**{"pytest-mlab.run": "registry-probe"}) == []
    monkeypatch.setattr(daemon, "_environment_client", daemon._environment_client.__wrapped__)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxError, match="daemon is not reachable"):
        remove_leftovers("docker")
    note = remove_leftovers(skip_unreachable=True).lines()[-1]
    assert note.startswith("docker containers: not checked (the docker daemon is not reachable")


def test_clean_command_removes_a_dead_process_container(capsys):
    from pytest_mlab.cli import main

    _leave_orphan("clean-probe")
    assert main(["clean"]) == 0
    assert "removed" in capsys.readouterr().out
    assert mlab_containers(**{"pytest-mlab.run": "clean-probe"}) == []


def test_clear_errors_when_the_sdk_the_daemon_or_the_image_is_missing(monkeypatch):
    from pytest_mlab.sandbox.docker import daemon
    from pytest_mlab.sandbox.docker.image import ensure_image

    with pytest.raises(SandboxError, match="docker pull no-such/image:0"):
        ensure_image(daemon.connect(), "no-such/image:0")
    monkeypatch.setattr(daemon, "_environment_client", daemon._environment_client.__wrapped__)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(SandboxError, match="daemon is not reachable.*start it"):
        daemon.connect()
    monkeypatch.setitem(sys.modules, "docker", None)
    with pytest.raises(SandboxError, match=r"pip install docker"):
        daemon.connect()


# ---------------------------------------------------------------------------------------------
# Real pytest sub-runs


AGENTS = {
    # a wrong submission: the run fails
    "wrong": 'env.step("Write File", {"file_name": "submission.txt", "content": "0"})',
    # a script that outlives the execute timeout and leaves a background child
    "stuck": ('env.step("Write File", {"file_name": "slow.py", "content": SLOW})\n'
              '        env.step("Execute Script", {"script_name": "slow.py"})'),
}
SLOW = "import subprocess, time\nsubprocess.Popen(['sleep', '600'])\nprint('waiting', flush=True)\ntime.sleep(600)\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """The toy project as three tasks (their run ids name their containers) and two agents."""
    root = copy_toy_project(pytester.path)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    tasks = root / "specs" / "tasks"
    source = (tasks / "toy.yaml").read_text().replace("execute_timeout: 20s", "execute_timeout: 3s")
    for name in ("dockerpass", "dockerstuck", "dockerkill"):
        (tasks / f"{name}.yaml").write_text(source.replace("name: toy", f"name: {name}"))
    (tasks / "toy.yaml").unlink()
    lines = ["from pytest_mlab.agents import Agent", f"SLOW = {SLOW!r}"]
    for name, body in AGENTS.items():
        lines.append(f"class {name.title()}(Agent):\n    def run(self, env):\n        {body}\n")
        (root / "agents" / f"{name}.yaml").write_text(
            f"kind: Agent\nname: {name}\nimplementation: probes:{name.title()}\n"
            "actions: [Write File, Execute Script, Final Answer]\n")
    (root / "probes.py").write_text("\n".join(lines))
    return root


def _containers_of(task: str) -> list:
    from pytest_mlab.sandbox.docker.conventions import LABEL, RUN_LABEL
    from pytest_mlab.sandbox.docker.daemon import connect

    return [c for c in connect().containers.list(all=True, filters={"label": LABEL}, ignore_removed=True)
            if c.labels.get(RUN_LABEL, "").startswith(f"{task}-") or c.labels.get(RUN_LABEL, "").startswith(f"{task}[")]


def _sub_run(pytester, tmp_path, task: str, *args: str):
    return run_specs(pytester, f"specs/tasks/{task}.yaml", "--sandbox=docker", *args,
                     cache_dir=tmp_path / "cache", subprocess=True, targets=())


@pytest.mark.slow
def test_passing_failing_and_timed_out_runs_leave_no_container(pytester, project, tmp_path):
    result = _sub_run(pytester, tmp_path, "dockerpass", "--agent=baseline,reference,wrong")
    result.assert_outcomes(passed=2, failed=1)
    runs = {run["agent"]: run for run in read_results(project)["runs"]}
    assert {run["sandbox"] for run in runs.values()} == {"docker"}
    assert runs["reference"]["success"] and not runs["wrong"]["passed"]
    assert _containers_of("dockerpass") == []

    result = _sub_run(pytester, tmp_path, "dockerstuck", "--agent=stuck")
    result.assert_outcomes(failed=1)
    trace = (project / "mlab-results" / "runs").glob("dockerstuck*/trace.jsonl")
    assert "stopped after 3.0s (time limit)" in next(trace).read_text()
    assert _containers_of("dockerstuck") == []


@pytest.mark.slow
def test_a_killed_session_leaves_a_container_that_the_next_session_removes(pytester, project, tmp_path):
    command = [sys.executable, "-m", "pytest", "specs/tasks/dockerkill.yaml", "--sandbox=docker", "--agent=stuck",
               "--mlab-cache", str(tmp_path / "cache"), "-p", "no:cacheprovider", "-p", "no:benchmark",
               "-p", "no:hypothesispytest"]
    proc = subprocess.Popen(command, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until the container exists (data preparation comes first)
            if _containers_of("dockerkill") or proc.poll() is not None:
                break
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _containers_of("dockerkill"), "the killed session had started no container"
    result = _sub_run(pytester, tmp_path, "dockerpass", "--agent=baseline")
    result.assert_outcomes(passed=1)
    assert _containers_of("dockerkill") == []


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_smoke_tasks_pass_in_docker(pytester, tmp_path):
    """`pytest specs/ -n 2 --sandbox=docker` on two smoke tasks, green: diabetes (a starter and a
    reference in the container) and vectorization (a timed measure step counted from the
    container's cgroup). digits, the third, trains a CNN for minutes and adds nothing docker-specific
    (its starter and reference are tested in tests/tasks/test_smoke_tasks.py)."""
    out = tmp_path / "results"
    result = pytester.runpytest_subprocess(
        str(REPO / "specs"), "--rootdir", str(REPO), "-c", str(REPO / "pyproject.toml"), "-m", "smoke",
        "-k", "diabetes or vectorization",
        "-n", "2", "--sandbox=docker", "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest",
        "--mlab-out", str(out), "--mlab-cache", str(tmp_path / "cache"), timeout=1200)
    result.assert_outcomes(passed=4)
    runs = read_results(out.parent, out.name)["runs"]
    assert {run["sandbox"] for run in runs} == {"docker"}
    assert {run["task"] for run in runs} == {"diabetes", "vectorization"}
    from pytest_mlab.sandbox.docker.conventions import RUN_LABEL

    left = [c.name for c in mlab_containers() if c.labels.get(RUN_LABEL, "").split("[")[0] in
            ("diabetes", "digits", "vectorization")]
    assert left == []


def test_a_task_dockerfile_is_built_offline_once_and_keeps_the_host_runtime(tmp_path):
    from pytest_mlab.sandbox.docker.daemon import connect
    from pytest_mlab.sandbox.docker.image import DEFAULT_IMAGE, build_task_image

    context = tmp_path / "docker"
    context.mkdir()
    (context / "tool.txt").write_text("a task's own tool\n")
    (context / "Dockerfile").write_text(f"FROM {DEFAULT_IMAGE}\nCOPY tool.txt /opt/task/tool.txt\n")
    options = SandboxOptions(label="dockerfile-probe", dockerfile=context / "Dockerfile")
    with open_sandbox("docker", options=options) as box:
        assert box.image.startswith("pytest-mlab/task:")
        result = run_python(box, "print(open('/opt/task/tool.txt').read().strip())")
    assert result.returncode == 0 and result.stdout.strip() == "a task's own tool"
    assert build_task_image(connect(), context / "Dockerfile") == box.image  # same content: no rebuild
    (context / "tool.txt").write_text("changed\n")
    changed = build_task_image(connect(), context / "Dockerfile")
    assert changed != box.image
    connect().images.remove(changed, force=True)
    connect().images.remove(box.image, force=True)


def test_a_broken_task_dockerfile_is_a_clear_error(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM pytest-mlab/host-runtime:1\nRUN /no/such/program\n")
    with pytest.raises(SandboxError, match=r"building the task's docker image from .*Dockerfile failed"):
        open_sandbox("docker", options=SandboxOptions(label="broken", dockerfile=tmp_path / "Dockerfile"))


def test_an_image_that_is_not_on_the_machine_is_a_clear_error():
    with pytest.raises(SandboxError, match=r"the docker image 'no-such/image:1' is not on this machine; fetch or build"):
        open_sandbox("docker", options=SandboxOptions(label="missing", image="no-such/image:1"))

"""Attacks on containment, as an agent that wants a high score (or just wants to stay) would try
them: exhaust memory or processes, run under a Python the sandbox cannot see so that ``auto``
quietly drops isolation, leave a detached process behind a grader, poison the grader's working
directory, and outlive the worker so that its folders and cgroups stay. Each runs against every
backend (or containment mode) that can run here."""

from __future__ import annotations

import errno
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from pytest_mlab.cli import main
from pytest_mlab.actions.registry import implementations
from pytest_mlab.env import Environment, ReadOnlyRules
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.sandbox import cgroups, containment, leftovers
from pytest_mlab.sandbox.owner import owned_prefix, pid_namespace, start_ticks
from pytest_mlab.sandbox.registry import sandbox_unavailable
from pytest_mlab.spec.models import DEFAULT_MEMORY, DEFAULT_PIDS, FunctionRef, Limits
from pytest_mlab.task_code import call_task_function
from pytest_mlab.trace import SnapshotStore, TraceWriter
from tests.env.support import repo_project
from tests.helpers import REPO, run_specs
from tests.sandbox.processes import tagged_processes

MiB = 1 << 20


@pytest.fixture
def environment(tmp_path: Path):
    """``environment(kind, **options)``: an Environment with Write File and Execute Script over a
    sandbox of that kind; closed at the end of the test."""
    opened: list[Environment] = []

    def build(kind: str, **options) -> Environment:
        sandbox = open_sandbox(kind, options=SandboxOptions(label=f"security-{kind}", **options))
        project = repo_project()
        root = tmp_path / f"run-{len(opened)}"
        root.mkdir()
        actions = (project.action("Write File"), project.action("Execute Script"))
        env = Environment(sandbox=sandbox, actions=actions,
                          implementations=implementations(actions),
                          limits=Limits(max_steps=100, execute_timeout=120), read_only=ReadOnlyRules(),
                          trace=TraceWriter(root / "trace.jsonl"), snapshots=SnapshotStore(root / "snapshots"),
                          research_problem="containment")
        opened.append(env)
        return env

    yield build
    for env in opened:
        env.sandbox.close()
        env.trace.close()


def execute(env: Environment, name: str, source: str) -> str:
    env.step("Write File", {"file_name": name, "content": source})
    return env.step("Execute Script", {"script_name": name})


def enforced_by_cgroup(env: Environment, kind: str, limit: str) -> bool:
    """Whether ``limit`` binds the sandbox's processes as a whole (docker always; the others
    where the cgroup file system is writable)."""
    return kind == "docker" or env.sandbox.limits.enforced.get(limit, "").startswith("cgroup")


# --- memory ------------------------------------------------------------------------------------

HOG = "size = {size}\nblock = bytearray(size)\nblock[::4096] = b'1' * len(range(0, size, 4096))\nprint('survived')\n"


def test_a_memory_hog_is_killed_and_the_observation_says_why(kind, environment):
    env = environment(kind, memory=256 * MiB)
    observation = execute(env, "hog.py", HOG.format(size=1 << 30))
    assert "survived" not in observation
    if enforced_by_cgroup(env, kind, "memory"):
        assert "failed with exit code -9" in observation
        assert "[killed: the sandbox's memory limit (256 MiB) was reached]" in observation
    else:  # RLIMIT_DATA: the allocation itself fails
        assert "MemoryError" in observation


@pytest.mark.slow
def test_default_limits_stop_a_6_gib_hog(kind, environment):
    """No memory option at all: the default (4 GiB) still applies, whatever the backend."""
    env = environment(kind)
    observation = execute(env, "hog.py", HOG.format(size=6 << 30))
    assert "survived" not in observation
    if enforced_by_cgroup(env, kind, "memory"):
        assert f"[killed: the sandbox's memory limit ({DEFAULT_MEMORY // MiB} MiB) was reached]" in observation
    else:
        assert "MemoryError" in observation


# --- processes -----------------------------------------------------------------------------------

STORM = """import errno, os, sys, time
started = 0
for _ in range(2000):
    try:
        pid = os.fork()
    except OSError as exc:
        print('refused after', started, errno.errorcode[exc.errno], flush=True)
        break
    if pid == 0:
        time.sleep(300)
        os._exit(0)
    started += 1
else:
    print('all', started, 'started', flush=True)
"""


def test_a_fork_storm_is_refused_beyond_the_pids_limit_and_nothing_survives(kind, environment):
    env = environment(kind)  # default limits: 512 processes
    if not enforced_by_cgroup(env, kind, "pids"):
        pytest.skip(f"the {kind} sandbox cannot limit processes here (no writable cgroup, so "
                    f"{env.sandbox.limits.enforced}); RLIMIT_NPROC would count all of the user's processes")
    tag = f"storm_{uuid.uuid4().hex}"
    observation = execute(env, f"{tag}.py", STORM)
    assert "refused after" in observation and "EAGAIN" in observation, observation
    started = int(observation.split("refused after")[1].split()[0])
    assert 0 < started < DEFAULT_PIDS
    assert tagged_processes(tag) == []


# --- a Python installation the sandbox could hide ----------------------------------------------

AUTO_PROBE = """
import json, sys
from pytest_mlab.sandbox import open_sandbox
from pytest_mlab.sandbox.registry import fallback_notice, resolve_kind, sandbox_unavailable
report = {"python": sys.prefix, "bwrap": sandbox_unavailable("bwrap"), "resolved": resolve_kind("auto"),
          "notice": fallback_notice("auto")}
with open_sandbox(sys.argv[1]) as sandbox:
    result = sandbox.exec([sandbox.python, "-c", "import sys; print(sys.prefix)"], timeout=60, output_limit=10000)
    report.update(name=sandbox.name, stdout=result.stdout, stderr=result.stderr, code=result.returncode)
print(json.dumps(report))
"""


@pytest.fixture
def venv_under_tmp(tmp_path: Path) -> Path:
    """A virtual environment under /tmp, where bwrap mounts its private tmpfs."""
    venv = tmp_path / "venv"
    assert str(venv).startswith("/tmp/"), "the attack needs the interpreter under /tmp"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(venv)], check=True)
    return venv


def probe_from(venv: Path, kind: str) -> dict:
    """pytest-mlab run from the venv, with the venv as the agents' Python too (--mlab-runtime)."""
    completed = subprocess.run([str(venv / "bin" / "python"), "-c", AUTO_PROBE, kind], capture_output=True, text=True,
                               timeout=300, env={**os.environ, "PYTHONPATH": str(REPO),
                                                 "MLAB_TASK_RUNTIME": str(venv / "bin" / "python")})
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout.splitlines()[-1])
    assert report["python"] == str(venv)
    return report


def test_a_venv_under_tmp_runs_in_bwrap_under_auto_or_says_loudly_why_not(venv_under_tmp):
    report = probe_from(venv_under_tmp, "auto")
    if sandbox_unavailable("bwrap") is None:  # bwrap works for this process: it must for the venv too
        assert report["bwrap"] is None and report["notice"] is None
        assert report["resolved"] == report["name"] == "bwrap"
        assert (report["code"], report["stdout"].strip()) == (0, str(venv_under_tmp)), report["stderr"]
    else:
        assert report["resolved"] == report["name"] == "local"
        assert report["notice"].startswith("WARNING: --sandbox=auto found no isolating sandbox")
        assert report["bwrap"] in report["notice"]


def test_a_venv_under_tmp_runs_in_every_backend(kind, venv_under_tmp):
    report = probe_from(venv_under_tmp, kind)
    assert report["name"] == kind
    assert (report["code"], report["stdout"].strip()) == (0, str(venv_under_tmp)), report["stderr"]


# --- task code: graders and data recipes ---------------------------------------------------------

TASK_CODE = '''
import os, socket, subprocess, sys, time
from pathlib import Path

DETACH = ("import os, sys, time\\n"
          "if os.fork(): os._exit(0)\\n"
          "os.setsid()\\n"
          "if os.fork(): os._exit(0)\\n"
          "open(sys.argv[2], 'w').close()\\n"
          "time.sleep(300)\\n")


def leave_survivor(workspace: Path, tag: str) -> float:
    """A grader-side import that double-forks a setsid child and returns once it has detached."""
    ready = workspace / f"ready-{tag}"
    subprocess.Popen([sys.executable, "-c", DETACH, tag, str(ready)], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    while not ready.exists() and time.time() < deadline:
        time.sleep(0.05)
    return 1.0 if ready.exists() else 0.0


def hang_with_survivor(workspace: Path, tag: str) -> float:
    leave_survivor(workspace, tag)
    time.sleep(300)


def leave_child(workspace: Path, tag: str) -> float:
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", tag])
    return 1.0


def write_here(workspace: Path) -> str:
    Path("planted.py").write_text("TRUTH = 'poisoned'\\n")
    return os.getcwd()


def talk(workspace: Path, port: int) -> str:
    print("progress 50%", flush=True)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        return connection.recv(16).decode()
'''

MODES = [containment.PID_NAMESPACE, containment.CGROUP, containment.PROCESS_TREE]
MODE_WORKS = {containment.PID_NAMESPACE: containment.pid_namespace_works, containment.CGROUP: containment.cgroup_works,
              containment.PROCESS_TREE: lambda: True}


@pytest.fixture
def assets(tmp_path: Path) -> Path:
    folder = tmp_path / "assets"
    folder.mkdir()
    (folder / "grader.py").write_text(TASK_CODE)
    return folder


@pytest.fixture(params=MODES)
def mode(request, monkeypatch) -> str:
    """Task code runs in this containment mode (each one this machine supports)."""
    if not MODE_WORKS[request.param]():
        pytest.skip(f"task code cannot be contained by a {request.param} here")
    monkeypatch.setattr(containment, "containment", lambda: request.param)
    return request.param


def call(assets: Path, function: str, workspace: Path, **arguments):
    return call_task_function(assets, FunctionRef("grader.py", function), {"workspace": workspace, **arguments},
                              timeout=120, env={"PATH": "/usr/bin:/bin"})


def test_a_double_forked_setsid_child_of_a_grader_does_not_survive(mode, assets, tmp_path):
    if mode == containment.PROCESS_TREE:
        pytest.skip("the process-tree fallback cannot promise this: a setsid child whose parent exits "
                    "between two looks at /proc escapes it (documented)")
    tag = f"survivor-{uuid.uuid4().hex}"
    result = call(assets, "leave_survivor", tmp_path, tag=tag)
    assert result.value == 1.0, result  # the survivor really did detach before the grader returned
    assert tagged_processes(tag) == []


@pytest.mark.slow  # waits out a 10 s timeout per mode
def test_a_grader_stopped_at_its_timeout_leaves_nothing_behind(mode, assets, tmp_path):
    if mode == containment.PROCESS_TREE:
        pytest.skip("the process-tree fallback cannot promise this for a setsid child (documented)")
    tag = f"survivor-{uuid.uuid4().hex}"
    result = call_task_function(assets, FunctionRef("grader.py", "hang_with_survivor"),
                                {"workspace": tmp_path, "tag": tag}, timeout=10, env={"PATH": "/usr/bin:/bin"})
    assert result.error == "grader.py:hang_with_survivor did not finish within 10s"
    assert (tmp_path / f"ready-{tag}").exists()  # the survivor had detached before the timeout
    assert tagged_processes(tag) == []


def test_a_plain_background_child_of_a_grader_does_not_survive(mode, assets, tmp_path):
    tag = f"child-{uuid.uuid4().hex}"
    assert call(assets, "leave_child", tmp_path, tag=tag).value == 1.0
    assert tagged_processes(tag) == []


def test_a_grader_writing_into_its_working_directory_leaves_the_assets_untouched(mode, assets, tmp_path):
    before = sorted(path.name for path in assets.iterdir())
    cwd = call(assets, "write_here", tmp_path).value
    assert sorted(path.name for path in assets.iterdir()) == before
    assert Path(cwd) != assets and not Path(cwd).exists()  # a fresh folder, removed afterwards


def test_data_recipes_keep_streaming_output_and_the_network(mode, assets, tmp_path, capfd):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        def answer() -> None:
            connection, _ = server.accept()
            with connection:
                connection.sendall(b"hello")

        threading.Thread(target=answer, daemon=True).start()
        result = call_task_function(assets, FunctionRef("grader.py", "talk"), {"workspace": tmp_path, "port": port},
                                    timeout=120, stream=True)
    finally:
        server.close()
    assert result.value == "hello" and result.error is None
    assert "progress 50%" in capfd.readouterr().out


# --- what a killed worker leaves behind ------------------------------------------------------------


def dead_owner() -> str:
    """``<pid>-<start ticks>-<pid namespace>`` of a process that has exited, as names carry it."""
    proc = subprocess.Popen(["sleep", "30"])
    ticks = start_ticks(proc.pid)
    proc.kill()
    proc.wait()
    assert ticks is not None and start_ticks(proc.pid) != ticks
    return f"{proc.pid}-{ticks}-{pid_namespace()}"


def test_the_temp_folder_sweep_removes_dead_owners_folders_only(tmp_path):
    owner = dead_owner()
    dead = tmp_path / f"mlab-ws-{owner}-abc123"
    (dead / "locked").mkdir(parents=True)
    (dead / "locked" / "file").write_text("x")
    (dead / "locked").chmod(0)  # an agent made part of its workspace unreadable
    live = Path(tmp_path / f"{owned_prefix('home')}xyz")
    live.mkdir()
    unowned = tmp_path / "mlab-ws-k3j4h5"  # no owner in the name: never judged
    unowned.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    link = tmp_path / f"mlab-grade-{owner}-link"
    link.symlink_to(outside)
    removed = leftovers.sweep_temp_folders(tmp_path)
    assert removed == [dead] and not dead.exists()
    assert live.is_dir() and unowned.is_dir() and link.is_symlink() and (outside / "keep").exists()


KILLED_WORKER = """
import json, os
from pytest_mlab.sandbox import open_sandbox
box = open_sandbox("local")
box.exec(["/bin/true"], timeout=30, output_limit=100)
print(json.dumps([str(box.workspace), str(box.home), *(str(group) for group in box.limits.groups)]))
os._exit(0)  # as SIGKILL would: no clean-up at all
"""


def leave_killed_workers_leftovers() -> list[Path]:
    """The workspace, home and cgroups a worker killed mid-run leaves behind."""
    completed = subprocess.run([sys.executable, "-c", KILLED_WORKER], capture_output=True, text=True, timeout=120,
                               check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    paths = [Path(path) for path in json.loads(completed.stdout)]
    assert len(paths) >= 2 and all(path.exists() for path in paths)
    return paths


def test_the_next_session_sweeps_what_a_killed_worker_left(pytester, toy_project, mlab_cache):
    left = leave_killed_workers_leftovers()
    run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    assert [path for path in left if path.exists()] == []


def test_pytest_mlab_clean_sweeps_what_a_killed_worker_left(capsys):
    left = leave_killed_workers_leftovers()
    assert main(["clean"]) == 0
    out = capsys.readouterr().out
    assert [path for path in left if path.exists()] == []
    # (under xdist another worker's session may have swept some of them first)
    assert "temp folder(s)" in out and "cgroup(s) of dead processes" in out


def cgroup_base() -> Path:
    bases = [base for _controller, base in cgroups._bases() if os.access(base, os.W_OK)]
    if not bases:
        pytest.skip("no writable cgroup hierarchy here (needs root on cgroup v1, or a delegated v2 subtree)")
    return bases[0]


def test_the_cgroup_sweep_removes_dead_owners_groups_and_kills_what_runs_in_them():
    base = cgroup_base()
    dead = base / f"mlab-sandbox-{dead_owner()}-sweep-test-{uuid.uuid4().hex[:8]}"
    live = base / f"{owned_prefix('sandbox')}sweep-test-{uuid.uuid4().hex[:8]}"
    dead.mkdir()
    live.mkdir()
    escaped = subprocess.Popen(["/bin/sh", "-c", f"echo $$ > {dead / 'cgroup.procs'} && exec sleep 300"],
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not cgroups._members(dead) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cgroups._members(dead) == [escaped.pid]
        cgroups.sweep([base])
        assert not dead.exists()
        assert escaped.wait(timeout=10) == -signal.SIGKILL
        assert live.is_dir()
    finally:
        escaped.kill()
        escaped.wait()
        cgroups.remove_group(live)
        cgroups.remove_group(dead)


def test_cgroup_removal_retries_while_the_group_is_busy(tmp_path, monkeypatch):
    group = tmp_path / "mlab-sandbox-group"
    group.mkdir()
    real_rmdir, calls = os.rmdir, []

    def busy_twice(path, *args, **kwargs):
        calls.append(path)
        if len(calls) <= 2:
            raise OSError(errno.EBUSY, "Device or resource busy", str(path))
        return real_rmdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "rmdir", busy_twice)
    assert cgroups.remove_group(group) is True
    assert len(calls) == 3 and not group.exists()


def test_cgroup_removal_gives_up_after_its_retries_and_leaves_the_group_for_the_sweep(tmp_path, monkeypatch):
    group = tmp_path / "mlab-sandbox-group"
    group.mkdir()
    calls = []

    def always_busy(path, *args, **kwargs):
        calls.append(path)
        raise OSError(errno.EBUSY, "Device or resource busy", str(path))

    monkeypatch.setattr(os, "rmdir", always_busy)
    assert cgroups.remove_group(group) is False
    assert len(calls) == cgroups._RMDIR_TRIES and group.is_dir()

"""GPUs per item (--mlab-gpus), without real GPUs: a fake nvidia-smi lists them, and processes
compete for them through the allocator's lock files as xdist workers do."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_mlab.errors import SandboxError, UsageError
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.sandbox import gpus as gpus_module
from pytest_mlab.sandbox.gpus import GpuPool, cuda_environment, list_gpus, parse_gpus
from pytest_mlab.sandbox.host_locks import locks_root
from pytest_mlab.sandbox.registry import sandbox_unavailable
from tests.helpers import assert_no_traceback, output_of, read_results, run_specs

REPO = Path(__file__).resolve().parents[2]


def fake_nvidia_smi(folder: Path, monkeypatch: pytest.MonkeyPatch, *, listing: str = "0\n1\n2\n3\n",
                    code: int = 0) -> None:
    """``nvidia-smi`` on PATH that lists ``listing`` (indexes, one a line) and exits with ``code``."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "nvidia-smi"
    program.write_text(f"#!/bin/sh\nprintf '{listing}'\nexit {code}\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    list_gpus.cache_clear()


@pytest.fixture(autouse=True)
def fresh_listing():
    """Each test sees its own nvidia-smi, and leaves the next test none of its answers."""
    list_gpus.cache_clear()
    yield
    list_gpus.cache_clear()


@pytest.fixture
def four_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvidia_smi(tmp_path / "bin", monkeypatch)


@pytest.fixture
def no_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


# ------------------------------------------------------------------ the option's values


def test_auto_none_a_count_and_indexes(four_gpus) -> None:
    assert parse_gpus("auto", "--mlab-gpus") is None and parse_gpus(None, "--mlab-gpus") is None
    assert GpuPool(Path("unused")).gpus == ("0", "1", "2", "3")  # auto: what nvidia-smi lists
    assert parse_gpus("none", "--mlab-gpus") == ()
    assert parse_gpus("2", "--mlab-gpus") == ("0", "1")
    assert parse_gpus("3,1", "--mlab-gpus") == ("3", "1")
    assert parse_gpus(" 2, ", "--mlab-gpus") == ("2",)  # one GPU by index: a trailing comma


@pytest.mark.parametrize("value, message", [
    ("0", "--mlab-gpus=0: a count of GPUs must be at least 1; for no GPU write none, for GPU 0 alone write 0,"),
    ("5", "--mlab-gpus=5: asks for 5 GPUs, but nvidia-smi lists 4: 0, 1, 2, 3"),
    ("1,7", "--mlab-gpus=1,7: no GPU 7 on this machine (nvidia-smi lists 4: 0, 1, 2, 3)"),
    ("1,1", "--mlab-gpus=1,1: GPU 1 is named twice"),
    ("many", "--mlab-gpus=many: expected auto, none, a count such as 2, or GPU indexes such as 0,1"),
    ("gpu0,gpu1", "--mlab-gpus=gpu0,gpu1: expected auto, none"),
    (",", "--mlab-gpus=,: expected auto, none"),
    ("-1", "--mlab-gpus=-1: expected auto, none"),
])
def test_bad_values_are_usage_errors_naming_the_option(four_gpus, value: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_gpus(value, "--mlab-gpus")
    assert message in str(caught.value)


def test_without_nvidia_smi_auto_is_none_and_indexes_are_a_usage_error(no_nvidia_smi) -> None:
    assert list_gpus() == () and GpuPool(Path("unused")).gpus == ()
    with pytest.raises(UsageError, match=r"ini setting mlab_gpus=0,: no GPU 0 on this machine \(nvidia-smi is not "
                                         r"installed\)"):
        parse_gpus("0,", "ini setting mlab_gpus")


def test_a_failing_nvidia_smi_lists_no_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_nvidia_smi(tmp_path / "bin", monkeypatch, listing="NVIDIA-SMI has failed\n", code=9)
    assert list_gpus() == ()
    with pytest.raises(UsageError, match="no GPU 0 on this machine \\(nvidia-smi lists none\\)"):
        parse_gpus("0,", "--mlab-gpus")


def test_what_cuda_is_told() -> None:
    assert cuda_environment(None) == {}
    assert cuda_environment(()) == {"CUDA_VISIBLE_DEVICES": "", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert cuda_environment(("1", "3"))["CUDA_VISIBLE_DEVICES"] == "1,3"


# ------------------------------------------------------------------ the allocator, in one process


def pool(folder: Path, ids: tuple[str, ...] = ("0", "1"), **kwargs) -> GpuPool:
    return GpuPool(folder, ids, poll=0.05, **kwargs)


def planned(run_id: str, sandbox: str) -> SimpleNamespace:
    """What the runner's GPU claim reads of a run plan, for a task whose variant needs a GPU."""
    return SimpleNamespace(run_id=run_id, needs_gpu=True, sandbox=sandbox, limits=SimpleNamespace(max_time=3600.0))


def test_an_item_that_needs_no_gpu_takes_a_free_one_or_none_at_once(tmp_path: Path) -> None:
    gpus = pool(tmp_path)
    with gpus.lease("a", required=False) as first, gpus.lease("b", required=False) as second:
        started = time.monotonic()
        with gpus.lease("c", required=False) as third:
            assert third.ids == ()
        assert time.monotonic() - started < 0.5  # it never waits
        assert (first.ids, second.ids) == (("0",), ("1",))
        holder = json.loads((tmp_path / "gpu-1.lock").read_text())
        assert holder == {"run": "b", "pid": os.getpid()}
    assert (tmp_path / "gpu-1.lock").read_text() == ""  # released: no stale holder
    with gpus.lease("d", required=True, timeout=0) as again:
        assert again.ids == ("0",)


def test_with_no_gpu_an_item_that_needs_one_fails_at_once_and_others_run_on_the_cpu(tmp_path: Path) -> None:
    for empty in (pool(tmp_path, ()), pool(tmp_path, ("0",), per_item=2)):
        assert empty.lease("cpu", required=False).ids == ()
        with pytest.raises(SandboxError, match="gpu-task needs a GPU, but this session has"):
            empty.lease("gpu-task", required=True)
    assert not (tmp_path / "queue").exists()  # nothing was even written


def test_several_gpus_per_item_all_or_nothing(tmp_path: Path) -> None:
    gpus = pool(tmp_path, ("0", "1", "2"), per_item=2)
    with gpus.lease("a", required=False) as pair:
        assert pair.ids == ("0", "1")
        assert gpus.lease("b", required=False).ids == ()  # one free is not enough, and none is kept
        with pool(tmp_path, ("0", "1", "2")).lease("c", required=False) as single:
            assert single.ids == ("2",)


def test_a_required_item_waits_for_a_gpu_and_says_so(tmp_path: Path) -> None:
    gpus = pool(tmp_path, ("0",))
    holder = gpus.lease("holder", required=True)
    said, got = [], []
    waiter = threading.Thread(target=lambda: got.append(gpus.lease("waiter", required=True, timeout=20,
                                                                      on_wait=said.append)))
    waiter.start()
    time.sleep(0.3)
    assert got == [] and said == ["waiting for a GPU"]
    holder.close()
    waiter.join(10)
    assert got[0].ids == ("0",)
    got[0].close()


def test_waiting_gives_up_after_its_timeout_naming_the_holder(tmp_path: Path) -> None:
    gpus = pool(tmp_path, ("0",))
    with gpus.lease("cifar10[mini-reference-s0]", required=True):
        started = time.monotonic()
        with pytest.raises(SandboxError) as caught:
            gpus.lease("imdb[mini-reference-s0]", required=True, timeout=0.3)
        assert 0.3 <= time.monotonic() - started < 3
    message = str(caught.value)
    assert message.startswith("imdb[mini-reference-s0] needs a GPU and got none in 0.3s: ")
    assert f"GPU 0 held by cifar10[mini-reference-s0] (pid {os.getpid()}); 0 other item(s) waiting" in message
    assert os.listdir(tmp_path / "queue") == []  # it left the line


# ------------------------------------------------------------------ processes competing, as xdist workers do

HOLDER = """
import sys
from pathlib import Path
from pytest_mlab.sandbox.gpus import GpuPool

folder, ids, label, required = sys.argv[1:5]
pool = GpuPool(Path(folder), tuple(ids.split(",")), poll=0.05)
lease = pool.lease(label, required=required == "required")
print(",".join(lease.ids) or "none", flush=True)
sys.stdin.read()  # holds it until the test closes stdin
lease.close()
"""


class Worker:
    """Another process leasing from the same pool: it prints what it got, and holds it until released."""

    def __init__(self, folder: Path, ids: str, label: str, *, required: bool = True) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), ids, label,
                                      "required" if required else "optional"], cwd=REPO,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def got(self) -> str:
        """What it leased (waits until it has something)."""
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(10) == 0

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def waiting(self, folder: Path) -> bool:
        return len(os.listdir(folder / "queue")) > 0 if (folder / "queue").exists() else False


@pytest.fixture
def workers():
    started: list[Worker] = []

    def start(*args, **kwargs) -> Worker:
        started.append(Worker(*args, **kwargs))
        return started[-1]

    yield start
    for worker in started:
        if worker.proc.poll() is None:
            worker.kill()


def wait_until(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_two_processes_get_different_gpus(tmp_path: Path, workers) -> None:
    other = workers(tmp_path, "0,1", "other")
    assert other.got() == "0"
    gpus = pool(tmp_path)
    with gpus.lease("mine", required=True, timeout=0) as mine:
        assert mine.ids == ("1",)
        assert workers(tmp_path, "0,1", "third", required=False).got() == "none"
    other.release()
    with gpus.lease("again", required=True, timeout=0) as again:
        assert again.ids == ("0",)


def test_a_killed_holder_frees_its_gpu(tmp_path: Path, workers) -> None:
    holder = workers(tmp_path, "0", "holder")
    assert holder.got() == "0"
    with pytest.raises(SandboxError, match="GPU 0 held by holder"):
        pool(tmp_path, ("0",)).lease("mine", required=True, timeout=0)
    holder.kill()
    with pool(tmp_path, ("0",)).lease("mine", required=True, timeout=5) as mine:
        assert mine.ids == ("0",)


def test_the_oldest_waiter_goes_first(tmp_path: Path, workers) -> None:
    """A process that frees its GPU and asks again at once (an xdist worker starting its next
    item) gets in line behind the item that was waiting, and so does an item needing no GPU."""
    gpus = pool(tmp_path, ("0",))
    mine = gpus.lease("first", required=True)
    waiter = workers(tmp_path, "0", "waiter")
    wait_until(lambda: waiter.waiting(tmp_path))
    mine.close()
    assert gpus.lease("optional", required=False).ids == ()
    with pytest.raises(SandboxError, match="got none in 1s: GPU 0 held by waiter"):
        gpus.lease("next", required=True, timeout=1)
    assert waiter.got() == "0"
    waiter.release()


def test_a_killed_waiter_does_not_hold_up_the_line(tmp_path: Path, workers) -> None:
    gpus = pool(tmp_path, ("0",))
    mine = gpus.lease("first", required=True)
    waiter = workers(tmp_path, "0", "waiter")
    wait_until(lambda: waiter.waiting(tmp_path))
    waiter.kill()
    mine.close()
    with gpus.lease("next", required=True, timeout=0) as again:
        assert again.ids == ("0",)
    assert os.listdir(tmp_path / "queue") == []  # its place in line was removed


def test_a_waiting_run_says_so_in_its_status(tmp_path: Path) -> None:
    from pytest_mlab.runner import _claim_gpus
    from pytest_mlab.trace.progress import SETTING_UP, RunStatus, read_statuses

    plan = planned("t[mini-a-s0]", "local")  # as a task whose variant needs one
    gpus = pool(tmp_path / "locks", ("0",))
    holder = gpus.lease("holder", required=True)
    got = []
    with RunStatus.start(tmp_path, "t", nodeid="n", run_id=plan.run_id, session="s", max_steps=3) as status:
        def run() -> None:
            with _claim_gpus(plan, gpus, status) as claim:
                got.append(claim.ids)

        thread = threading.Thread(target=run)
        thread.start()
        wait_until(lambda: [s.phase for s in read_statuses(tmp_path, "s")] == ["waiting for a GPU"])
        holder.close()
        thread.join(10)
        assert got == [("0",)]
        assert [s.phase for s in read_statuses(tmp_path, "s")] == [SETTING_UP]


# ------------------------------------------------------------------ every sandbox honours the assignment

SHOW_ENV = "import os; print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')), os.environ.get('CUDA_DEVICE_ORDER'))"


def run_python(box, code: str):
    box.write("probe.py", textwrap.dedent(code).encode())
    result = box.exec([box.python, "probe.py"], timeout=60, output_limit=100_000,
                      env={"CUDA_VISIBLE_DEVICES": "0"})  # a caller cannot widen the item's GPUs
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_with_no_gpu_assigned_no_backend_lets_code_see_one(kind: str) -> None:
    with open_sandbox(kind, options=SandboxOptions(gpus=(), gpu=True, label="no-gpu")) as box:
        assert run_python(box, SHOW_ENV) == "'' PCI_BUS_ID\n"


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_local_and_bwrap_show_code_its_own_gpus(kind: str) -> None:
    reason = sandbox_unavailable(kind)
    if reason:
        pytest.skip(reason)
    with open_sandbox(kind, options=SandboxOptions(gpus=("1", "3"), label="two-gpus")) as box:
        assert run_python(box, SHOW_ENV) == "'1,3' PCI_BUS_ID\n"


def test_without_an_assignment_local_leaves_cuda_alone() -> None:
    with open_sandbox("local", options=SandboxOptions()) as box:
        assert run_python(box, SHOW_ENV) == "'0' None\n"


def test_the_choice_of_gpu_devices() -> None:
    assert SandboxOptions(gpus=("0",)).passes_gpus
    assert not SandboxOptions(gpus=(), gpu=True).passes_gpus  # a task needing a GPU that got none sees none
    assert SandboxOptions(gpu=True).passes_gpus and not SandboxOptions().passes_gpus  # no assignment: as the task says


@pytest.mark.skipif(sandbox_unavailable("bwrap") is not None, reason="bwrap cannot run here")
def test_bwrap_binds_the_gpu_device_nodes_only_when_the_item_holds_a_gpu(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_mlab.sandbox import bwrap

    device = tmp_path / "nvidia0"  # stands for /dev/nvidia0
    device.write_text("")
    monkeypatch.setattr(bwrap, "_gpu_devices", lambda: [str(device)])
    seen = {}
    for name, options in {"held": SandboxOptions(gpus=("0",)), "none": SandboxOptions(gpus=(), gpu=True)}.items():
        with open_sandbox("bwrap", options=options) as box:
            seen[name] = run_python(box, f"import os; print(os.path.exists({str(device)!r}))").strip()
    assert seen == {"held": "True", "none": "False"}


# ------------------------------------------------------------------ docker's device request


class FakeDaemon:
    def __init__(self, runtimes: dict) -> None:
        self.runtimes = runtimes

    def info(self) -> dict:
        return {"Runtimes": self.runtimes}


def test_docker_requests_the_assigned_gpus_only(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("docker")
    from pytest_mlab.sandbox.docker import gpus as docker_gpus

    monkeypatch.setattr(docker_gpus, "_has_gpu", lambda client, remote: True)
    daemon = FakeDaemon({"nvidia": {}})
    (request,) = docker_gpus.device_requests(daemon, SandboxOptions(gpus=("1", "3")))
    assert (request["DeviceIDs"], request["Capabilities"], request["Count"]) == (["1", "3"], [["gpu"]], 0)
    assert docker_gpus.device_requests(daemon, SandboxOptions(gpus=(), gpu=True)) == []
    (every,) = docker_gpus.device_requests(daemon, SandboxOptions(gpu=True))  # no assignment: as before, every GPU
    assert every["Count"] == -1


def test_docker_without_gpu_support_fails_a_task_that_needs_one(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("docker")
    from pytest_mlab.sandbox.docker import gpus as docker_gpus

    monkeypatch.setattr(docker_gpus, "_has_gpu", lambda client, remote: False)
    daemon = FakeDaemon({"runc": {}})
    assert docker_gpus.device_requests(daemon, SandboxOptions(gpus=("0",))) == []  # runs on the CPU
    with pytest.raises(SandboxError, match="t\\[mini\\] needs a GPU, but docker here cannot pass one into a "
                                           "container .*install the NVIDIA Container Toolkit"):
        docker_gpus.device_requests(daemon, SandboxOptions(gpus=("0",), gpu=True, label="t[mini]"))


@pytest.mark.skipif(sandbox_unavailable("docker") is not None, reason="docker cannot run here")
def test_the_daemon_gets_the_device_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPU here, so the daemon refuses a container asking for GPU 0: proof the request reached it."""
    from pytest_mlab.sandbox.docker import gpus as docker_gpus

    monkeypatch.setattr(docker_gpus, "_has_gpu", lambda client, remote: True)
    with open_sandbox("docker", options=SandboxOptions(gpus=("0",), label="gpu-request")) as box:
        with pytest.raises(SandboxError, match="cannot start a docker container .*(gpu|device)"):
            box.exec(["true"], timeout=30, output_limit=1000)


# ------------------------------------------------------------------ the option, in real sessions


@pytest.mark.parametrize("args, ini, message", [
    (("--mlab-gpus=2,9",), "", "--mlab-gpus=2,9: no GPU 9 on this machine (nvidia-smi lists 4: 0, 1, 2, 3)"),
    (("--mlab-gpus=0",), "", "--mlab-gpus=0: a count of GPUs must be at least 1"),
    ((), "[pytest]\nmlab_gpus = lots\n", "ini setting mlab_gpus=lots: expected auto, none, a count"),
])
def test_bad_values_stop_the_session_before_anything_runs(pytester, toy_project, mlab_cache, four_gpus,
                                                          args, ini: str, message: str) -> None:
    (toy_project / "pytest.ini").write_text(ini)
    result = run_specs(pytester, "--collect-only", *args, cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output_of(result)
    assert message in output_of(result)
    assert_no_traceback(output_of(result))


def test_a_run_holds_its_gpu_its_code_sees_it_and_the_results_say_which(pytester, toy_project, mlab_cache,
                                                                        four_gpus) -> None:
    script = toy_project / "task_assets" / "toy" / "reference" / "train.py"
    script.write_text("import os\nprint('cuda:', repr(os.environ.get('CUDA_VISIBLE_DEVICES')))\n" + script.read_text())
    result = run_specs(pytester, "--agent=reference", "--sandbox=local", "--mlab-gpus=2,", cache_dir=mlab_cache)
    result.assert_outcomes(passed=1)
    (run,) = read_results(toy_project)["runs"]
    assert run["gpus"] == ["2"]
    records = [json.loads(line) for line in Path(run["trace"]).read_text().splitlines()]
    assert records[0]["type"] == "run" and records[0]["gpus"] == ["2"]
    assert "cuda: '2'" in Path(run["trace"]).read_text()
    lock = locks_root() / gpus_module.LOCK_DIR / gpus_module.THIS_MACHINE / "gpu-2.lock"
    assert lock.read_text() == ""  # released once graded
    assert not (toy_project / "mlab-results" / ".gpus").exists()  # the machine's lock, not the results folder's

    result = run_specs(pytester, "--agent=reference", "--sandbox=local", "--mlab-gpus=none", cache_dir=mlab_cache)
    result.assert_outcomes(passed=1)
    (run,) = read_results(toy_project)["runs"]
    assert run["gpus"] == [] and "cuda: ''" in Path(run["trace"]).read_text()


def test_xdist_workers_share_the_machines_gpus(pytester, toy_project, mlab_cache, four_gpus) -> None:
    result = run_specs(pytester, "-n", "2", "--seeds=2", "--agent=reference", "--sandbox=local", cache_dir=mlab_cache)
    result.assert_outcomes(passed=2)
    runs = read_results(toy_project)["runs"]
    assert [len(run["gpus"]) for run in runs] == [1, 1]  # auto: each held one of the four nvidia-smi lists
    assert {gpu for run in runs for gpu in run["gpus"]} <= {"0", "1", "2", "3"}



def hosts_that_hold_gpus(monkeypatch) -> dict:
    """Docker hosts' own GPU holds (gpu_leases.py), kept in a dict: {(host, gpu): run}."""
    from pytest_mlab.sandbox.docker import gpu_leases

    held: dict = {}

    def take(host, gpu, run, seconds):
        assert seconds > 3600
        if (host, gpu) in held:
            return None
        held[host, gpu] = run
        return lambda: held.pop((host, gpu))

    monkeypatch.setattr(gpu_leases, "take_gpu", take)
    return held


def test_a_remote_docker_host_shares_out_its_own_gpus(tmp_path: Path, monkeypatch) -> None:
    """Runs on a remote host lease that host's GPUs (listed there), in a folder of its own; a
    controller without GPUs drives it, and --mlab-gpus=none still means none."""
    from pytest_mlab import runner
    from pytest_mlab.sandbox.docker import gpus as docker_gpus
    from pytest_mlab.sandbox.docker import hosts as docker_hosts
    from pytest_mlab.trace.progress import RunStatus

    remote = docker_hosts.DockerHost("tcp://gpu-box:2376")
    monkeypatch.setattr(docker_hosts, "current_host", lambda: remote)
    held_on_hosts = hosts_that_hold_gpus(monkeypatch)
    monkeypatch.setattr(docker_gpus, "host_gpus", lambda host: ("0", "1") if host == remote else ())
    session = pool(tmp_path / ".gpus" / "controller", None)  # auto, and this machine has no GPU
    first, second = planned("t[mini-a-s0]", "docker"), planned("t[mini-a-s1]", "docker")
    with RunStatus.start(tmp_path, "t", nodeid="n", run_id="r", session="s", max_steps=3) as status:
        with runner._claim_gpus(first, session, status) as one, runner._claim_gpus(second, session, status) as two:
            assert {one.ids, two.ids} == {("0",), ("1",)}
            assert sorted(os.listdir(tmp_path / ".gpus" / "docker-tcp_gpu-box_2376")) == ["gpu-0.lock", "gpu-1.lock",
                                                                                            "pool.lock"]
            assert held_on_hosts == {(remote, "0"): "t[mini-a-s0]", (remote, "1"): "t[mini-a-s1]"} or \
                held_on_hosts == {(remote, "1"): "t[mini-a-s0]", (remote, "0"): "t[mini-a-s1]"}
        assert held_on_hosts == {}  # let go on the host too
        with pytest.raises(SandboxError, match="needs a GPU"):  # none: none, on every host
            with runner._claim_gpus(first, pool(tmp_path / "none", ()), status):
                pass
        with pytest.raises(SandboxError, match="needs a GPU"):  # a local run still leases this machine's
            with runner._claim_gpus(planned("u", "local"), session, status):
                pass


def test_a_run_whose_sandbox_moves_to_another_host_holds_that_hosts_gpus_and_frees_the_first(
        tmp_path: Path, monkeypatch) -> None:
    """GPU ids name one host's GPUs: a run leased GPU 0 on host A, A stopped answering, and its
    grading opens on host B. Passing A's ids to B would double-book B's GPU 0."""
    from pytest_mlab import runner
    from pytest_mlab.sandbox.docker import gpus as docker_gpus
    from pytest_mlab.sandbox.docker import hosts as docker_hosts
    from pytest_mlab.trace.progress import RunStatus

    first, second = docker_hosts.DockerHost("tcp://gpu-a:2376"), docker_hosts.DockerHost("tcp://gpu-b:2376")
    monkeypatch.setattr(docker_hosts, "current_host", lambda: first)
    held_on_hosts = hosts_that_hold_gpus(monkeypatch)
    monkeypatch.setattr(docker_gpus, "host_gpus", lambda host: ("0",))  # one GPU on each host
    session = pool(tmp_path / "gpus" / "this-machine", None)
    on_first, on_second = (session.on_docker_host(host.name, lambda: ("0",)) for host in (first, second))
    plan = planned("t[mini-a-s0]", "docker")
    with RunStatus.start(tmp_path, "t", nodeid="n", run_id="r", session="s", max_steps=3) as status, \
            runner._claim_gpus(plan, session, status) as claim:
        assert claim.ids == ("0",)
        with on_first.lease("other", required=False) as other:
            assert other.ids == ()  # A's GPU is the run's
        assert claim.ids_on(docker_gpus.gpu_machine(first)) == ("0",)  # the same host: the same lease
        assert claim.ids_on(docker_gpus.gpu_machine(second)) == ("0",)  # B's GPU 0, leased on B
        with on_second.lease("other", required=False) as other:
            assert other.ids == ()
        with on_first.lease("other", required=False) as other:
            assert other.ids == ("0",)  # A's is free again
        assert held_on_hosts == {(second, "0"): "t[mini-a-s0]"}  # held on B itself, for other controllers
    with on_second.lease("other", required=False) as other:
        assert other.ids == ("0",)  # the run is over: B's is free too


@pytest.mark.slow
def test_a_docker_sandbox_runs_with_the_gpus_its_claim_holds_on_its_own_host(tmp_path: Path, four_gpus) -> None:
    """The sandbox takes its GPU ids from the claim for the machine it opened on, not the ids
    the run was given before it opened."""
    reason = sandbox_unavailable("docker")
    if reason:
        pytest.skip(f"docker cannot run here: {reason}")
    from pytest_mlab.sandbox.docker import hosts as docker_hosts
    from pytest_mlab.sandbox.gpus import GpuClaim

    remote = docker_hosts.DockerHost("tcp://gpu-a:2376")
    here = pool(tmp_path / "gpus" / "this-machine", None)  # auto: the four the fake nvidia-smi lists
    on_remote = here.on_docker_host(remote.name, lambda: ("0",))
    with GpuClaim(lambda where: here if where is None else on_remote, "t[mini-a-s0]", required=False) as claim:
        with here.lease("other", required=False) as other:  # this machine's GPU 0 is another run's
            assert claim.ids_on(remote) == ("0",)  # leased on the remote host first
            options = SandboxOptions(gpus=claim.ids, gpu_claim=claim, label="t[mini-a-s0]")
            with open_sandbox("docker", options=options) as box:  # but it opens on the local daemon
                assert box.options.gpus == ("1",) and other.ids == ("0",)
            with on_remote.lease("third", required=False) as third:
                assert third.ids == ("0",)  # the remote host's GPU was let go


def test_a_remote_hosts_gpus_are_listed_by_its_own_nvidia_smi(monkeypatch) -> None:
    pytest.importorskip("docker")
    probe = _Probe(b"0\n1\n")
    docker_gpus, host = _host_with(monkeypatch, {"nvidia": {}}, probe)
    try:
        assert docker_gpus.host_gpus(host) == ("0", "1")
    finally:
        docker_gpus.host_gpus.cache_clear()
    (image, command, options), = probe.calls
    assert command[0] == "nvidia-smi" and options["network_mode"] == "none" and probe.removed == 1
    assert options["device_requests"][0]["Capabilities"] == [["gpu", "utility"]]


class _Probe:
    """A daemon's containers for the GPU probe: the container prints ``output``, or its start
    raises ``error``; each is removed (``removed`` counts them)."""

    def __init__(self, output: bytes = b"", error: Exception | None = None) -> None:
        self.output, self.error, self.removed, self.calls = output, error, 0, []

    def create(self, image, command, **options):
        self.calls.append((image, command, options))
        probe = self

        class Container:
            def start(self):
                if probe.error is not None:
                    raise probe.error

            def wait(self, timeout):
                return {"StatusCode": 0}

            def logs(self, **streams):
                return probe.output

            def remove(self, force):
                probe.removed += 1

        return Container()


def _host_with(monkeypatch, runtimes: dict, probe: _Probe):
    from pytest_mlab.sandbox.docker import gpus as docker_gpus
    from pytest_mlab.sandbox.docker.hosts import DockerHost

    daemon = FakeDaemon(runtimes)
    daemon.containers = probe
    monkeypatch.setattr(DockerHost, "client", lambda self: daemon)
    docker_gpus.host_gpus.cache_clear()
    return docker_gpus, DockerHost("tcp://box:2376")


def test_a_host_with_the_toolkit_hook_but_no_nvidia_runtime_has_its_gpus_found(monkeypatch) -> None:
    pytest.importorskip("docker")
    docker_gpus, host = _host_with(monkeypatch, {"runc": {}}, _Probe(b"0\n1\n"))
    try:
        assert docker_gpus.host_gpus(host) == ("0", "1")
    finally:
        docker_gpus.host_gpus.cache_clear()


def test_a_gpu_lookup_that_fails_is_reported_not_taken_for_no_gpu(monkeypatch) -> None:
    docker = pytest.importorskip("docker")
    failing = _Probe(error=docker.errors.APIError("boom: oci hook failed"))
    docker_gpus, host = _host_with(monkeypatch, {"nvidia": {}}, failing)
    try:
        with pytest.raises(SandboxError, match="cannot list the GPUs of the docker host tcp://box:2376: .*boom"):
            docker_gpus.host_gpus(host)
    finally:
        docker_gpus.host_gpus.cache_clear()
    no_driver = docker.errors.APIError('could not select device driver "" with capabilities: [[gpu utility]]')
    probe = _Probe(error=no_driver)
    docker_gpus, host = _host_with(monkeypatch, {"runc": {}}, probe)
    try:
        assert docker_gpus.host_gpus(host) == ()
    finally:
        docker_gpus.host_gpus.cache_clear()
    assert probe.removed == 1  # the container that could not start is not left behind


def test_a_gpu_task_is_not_skipped_on_a_gpu_less_controller_that_drives_gpu_hosts(monkeypatch) -> None:
    """The skip asks the hosts of --mlab-docker-hosts, not this machine's nvidia-smi."""
    pytest.importorskip("docker")
    from pytest_mlab.data import requirements
    from pytest_mlab.sandbox.docker import gpus as docker_gpus
    from pytest_mlab.sandbox.docker import hosts as docker_hosts

    monkeypatch.setattr(requirements, "_nvidia_smi_here", lambda: False)
    assert "nvidia-smi was not found" in requirements._no_gpu()
    gpu_box, cpu_box = docker_hosts.DockerHost("tcp://gpu-box:2376"), docker_hosts.DockerHost("tcp://cpu-box:2376")
    monkeypatch.setattr(docker_hosts, "_pool", (cpu_box, gpu_box))
    monkeypatch.setattr(docker_gpus, "host_gpus", lambda host: ("0",) if host == gpu_box else ())
    assert requirements._no_gpu() is None
    monkeypatch.setattr(docker_hosts, "_pool", (cpu_box,))
    assert requirements._no_gpu() == "needs a GPU, and no docker host of --mlab-docker-hosts has one"

    def fails(host):
        raise SandboxError(f"cannot list the GPUs of the docker host {host.name}: timed out")

    monkeypatch.setattr(docker_gpus, "host_gpus", fails)
    assert "could not be asked for theirs: cannot list the GPUs of the docker host tcp://cpu-box:2376: timed out" \
        in requirements._no_gpu()

"""--mlab-ray on a real Ray cluster of this machine (tests/cluster/ray_nodes.py): two nodes with 3
logical GPUs each and one without GPUs. Each test is a session of its own (a pytester sub-run),
which connects to the cluster as Ray drivers do."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.cluster.ray_nodes import RayTestCluster, live_drivers, node_label, processes_naming, ray_cluster_fixture
from tests.helpers import UNRELATED_PLUGINS, read_results

pytestmark = pytest.mark.slow
SESSION_TIMEOUT = 300  # seconds: a session that hangs (a driver that cannot reach the cluster) fails

# the reference solution, slowed down, saying which GPUs it was given
REFERENCE = """\
import csv, os, time
with open("data.csv") as handle:
    values = [float(row["value"]) for row in csv.DictReader(handle)]
print("gpus", os.environ.get("CUDA_VISIBLE_DEVICES"))
time.sleep(float(os.environ.get("MLAB_TEST_SLEEP", "{sleep}")))
with open("submission.txt", "w") as handle:
    handle.write(str(sum(values)))
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayTestCluster]:
    yield from ray_cluster_fixture()


@pytest.fixture(scope="module")
def gpu_nodes(cluster: RayTestCluster) -> list[Any]:
    return [cluster.add_node(gpus=3), cluster.add_node(gpus=3), cluster.add_node(gpus=0)]


def gpu_task(project: Path, name: str, *, gpus: int | None, sleep: float) -> None:
    """A copy of the toy task that requires a GPU (``gpus`` per run: limits.gpus, None for the default)."""
    spec = (project / "specs" / "tasks" / "toy.yaml").read_text()
    limits = f", gpus: {gpus}" if gpus is not None else ""
    spec = spec.replace("name: toy", f"name: {name}").replace("assets: task_assets/toy", f"assets: task_assets/{name}")
    spec = spec.replace("execute_timeout: 20s}", f"execute_timeout: 60s{limits}}}") + "requires: {gpu: true}\n"
    (project / "specs" / "tasks" / f"{name}.yaml").write_text(spec)
    assets = project / "task_assets" / name
    if not assets.exists():
        import shutil

        shutil.copytree(project / "task_assets" / "toy", assets)
    slow_reference(project, name, sleep=sleep)


def slow_reference(project: Path, name: str, *, sleep: float) -> None:
    (project / "task_assets" / name / "reference" / "train.py").write_text(REFERENCE.format(sleep=sleep))


def session(pytester: pytest.Pytester, cluster: RayTestCluster, cache: Path, *args: str) -> pytest.RunResult:
    """A session of the project in the pytester folder whose runs Ray places on ``cluster``."""
    return pytester.runpytest_subprocess(*session_args(cluster, cache, *args), timeout=SESSION_TIMEOUT)


def session_args(cluster: RayTestCluster, cache: Path, *args: str) -> tuple[str, ...]:
    return ("specs", "--mlab-cache", str(cache), "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
            f"--mlab-ray={cluster.address}", "--mlab-out", "mlab-results", *args)


def runs_of(project: Path) -> list[dict[str, Any]]:
    """Each run's host, GPUs and the times its trace began and ended."""
    runs = []
    for row in read_results(project)["runs"]:
        records = [json.loads(line) for line in Path(row["trace"]).read_text().splitlines() if line.strip()]
        runs.append({**row, "start": records[0]["t"], "end": records[-1]["t"]})
    return runs


def test_each_run_goes_to_a_node_with_its_gpus_and_no_gpu_is_held_twice(
        pytester: pytest.Pytester, toy_project: Path, mlab_cache: Path, cluster: RayTestCluster,
        gpu_nodes: list[Any]) -> None:
    gpu_task(toy_project, "one-gpu", gpus=None, sleep=2)
    gpu_task(toy_project, "two-gpus", gpus=2, sleep=2)
    gpu_task(toy_project, "four-gpus", gpus=4, sleep=0)  # more than any node has
    (toy_project / "specs" / "tasks" / "toy.yaml").unlink()
    result = session(pytester, cluster, mlab_cache, "--agent=reference", "--seeds=4", "-n", "8", "-rs")
    assert result.ret == 0, "\n".join(result.outlines[-40:] + result.errlines[-40:])
    assert result.parseoutcomes() == {"passed": 8, "skipped": 4}, result.outlines[-20:]
    result.stdout.fnmatch_lines(["*needs 4 GPU(s) on one node, and no node of the Ray cluster (--mlab-ray) has more "
                                 "than 3*"])
    runs = runs_of(toy_project)
    assert len(runs) == 8
    with_gpus = {node_label(node) for node in gpu_nodes[:2]}
    for run in runs:
        assert run["host"] in with_gpus, run
        assert len(run["gpus"]) == (2 if run["task"] == "two-gpus" else 1), run
        assert set(run["gpus"]) <= {"0", "1", "2"}, run  # a run's GPUs all come from its one node
    for index, run in enumerate(runs):
        for other in runs[index + 1:]:
            at_once = run["start"] < other["end"] and other["start"] < run["end"]
            if at_once and run["host"] == other["host"]:
                assert not set(run["gpus"]) & set(other["gpus"]), (run, other)
    # 12 GPUs asked for, 6 on the nodes: some runs waited for others to end on their node
    assert any(run["end"] <= other["start"] for run in runs for other in runs if run["host"] == other["host"])
    assert not cluster.temp_left(), "the runs left temp folders behind"
    assert not processes_naming(str(toy_project)), "the session left processes behind"
    assert live_drivers(cluster) == 0, "the session's Ray drivers are still connected"


def test_a_killed_node_ends_its_run_as_host_lost_and_resume_runs_it_again(
        pytester: pytest.Pytester, toy_project: Path, mlab_cache: Path, cluster: RayTestCluster,
        gpu_nodes: list[Any]) -> None:
    doomed = cluster.add_node(gpus=5)  # the only node a run holding 5 GPUs fits on
    gpu_task(toy_project, "five-gpus", gpus=5, sleep=600)
    (toy_project / "specs" / "tasks" / "toy.yaml").unlink()
    running = pytester.popen([sys.executable, "-m", "pytest", *session_args(cluster, mlab_cache, "--agent=reference")],
                             stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not processes_naming("ray::_on_node") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert processes_naming("ray::_on_node"), "the run never started on its node"
        time.sleep(3)  # into its first steps
        cluster.remove_node(doomed, kill=True)
        assert running.wait(timeout=120) == 1
    finally:
        if running.poll() is None:
            running.kill()
    (lost,) = read_results(toy_project)["runs"]
    assert lost["end_reason"] == "host lost" and lost["infrastructure"], lost
    replacement = cluster.add_node(gpus=5)
    try:
        slow_reference(toy_project, "five-gpus", sleep=0)
        result = session(pytester, cluster, mlab_cache, "--agent=reference", "--mlab-resume")
    finally:
        cluster.remove_node(replacement)
    assert result.ret == 0, "\n".join(result.outlines[-40:] + result.errlines[-40:])
    (rerun,) = read_results(toy_project)["runs"]
    assert rerun["passed"] and rerun["host"] == node_label(replacement) and not rerun["resumed"], rerun
    assert not cluster.temp_left(), "what the killed node's run left was not swept by the next session"


def test_a_node_runs_its_run_in_its_own_local_docker(
        pytester: pytest.Pytester, toy_project: Path, mlab_cache: Path, cluster: RayTestCluster,
        gpu_nodes: list[Any]) -> None:
    """--sandbox=docker on a Ray node is the node's own daemon, reached as this machine's would be
    (bind mounts, its local socket); the run is recorded as the node's, not as "the local socket"
    that every node has, and nothing of it is left behind."""
    from pytest_mlab.sandbox.registry import sandbox_unavailable

    reason = sandbox_unavailable("docker")
    if reason:
        pytest.skip(f"docker cannot run here: {reason}")
    slow_reference(toy_project, "toy", sleep=0)
    result = session(pytester, cluster, mlab_cache, "--agent=reference", "--sandbox=docker")
    assert result.ret == 0, "\n".join(result.outlines[-40:] + result.errlines[-40:])
    (run,) = read_results(toy_project)["runs"]
    assert run["passed"] and run["sandbox"] == "docker" and run["host"].startswith("ray:"), run
    import docker

    # this run's containers only: other tests on the same daemon run toy items of their own at the same time
    left = docker.from_env().containers.list(all=True, filters={"label": f"pytest-mlab.run={run['run_id']}"})
    assert not [c.name for c in left], "a container was left"
    assert not cluster.temp_left(), "the run left temp folders behind"

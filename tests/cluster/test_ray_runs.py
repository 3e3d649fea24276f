"""--mlab-ray on a real Ray cluster of this machine (tests/cluster/ray_nodes.py): two nodes with 3
logical GPUs each and one without GPUs. Each test is a session of its own (a pytester sub-run),
which connects to the cluster as Ray drivers do."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.cluster.ray_nodes import RayTestCluster, node_label, processes_naming, ray_cluster_fixture
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
    (assets / "reference" / "train.py").write_text(REFERENCE.format(sleep=sleep))


def session(pytester: pytest.Pytester, cluster: RayTestCluster, cache: Path, *args: str) -> pytest.RunResult:
    """A session of the project in the pytester folder whose runs Ray places on ``cluster``."""
    return pytester.runpytest_subprocess("specs", "--mlab-cache", str(cache), "-p", "no:cacheprovider",
                                         *UNRELATED_PLUGINS, f"--mlab-ray={cluster.address}", "--mlab-out",
                                         "mlab-results", *args, timeout=SESSION_TIMEOUT)


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
    (toy_project / "specs" / "tasks" / "toy.yaml").unlink()
    result = session(pytester, cluster, mlab_cache, "--agent=reference", "--seeds=4", "-n", "8")
    assert result.ret == 0, "\n".join(result.outlines[-40:] + result.errlines[-40:])
    runs = runs_of(toy_project)
    assert len(runs) == 8
    with_gpus = {node_label(node) for node in gpu_nodes[:2]}
    for run in runs:
        assert run["host"] in with_gpus, run
        assert len(run["gpus"]) == (2 if run["task"] == "two-gpus" else 1), run
    for index, run in enumerate(runs):
        for other in runs[index + 1:]:
            at_once = run["start"] < other["end"] and other["start"] < run["end"]
            if at_once and run["host"] == other["host"]:
                assert not set(run["gpus"]) & set(other["gpus"]), (run, other)

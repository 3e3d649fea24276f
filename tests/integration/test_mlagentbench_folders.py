"""MLAgentBench folders as tasks, end to end through real pytest sub-runs: the baseline agent
reproduces the baseline and the reference agent succeeds, with a local folder and with one fetched
from an archive on a loopback server; an archive that fails its checksum stops the session and
leaves nothing unpacked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mlab.trace import SnapshotStore, read_trace
from tests.data.fakes import FileServer
from tests.helpers import ACTIONS_DIR, AGENTS_DIR, assert_no_traceback, output_of, run_specs
from tests.mlagentbench_folder import REFERENCE, spec, tar_folder, write_folder, write_reference


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    """A user's project with the repository's actions and agents and no task yet."""
    root = pytester.path
    for source, dest in ((ACTIONS_DIR, root / "specs" / "actions"), (AGENTS_DIR, root / "agents")):
        dest.mkdir(parents=True)
        for path in source.glob("*.yaml"):
            (dest / path.name).write_text(path.read_text())
    (root / "specs" / "tasks").mkdir()
    (root / "pytest.ini").write_text("")
    return root


def runs(root: Path) -> dict[str, dict]:
    results = json.loads((root / "mlab-results" / "results.json").read_text())
    return {row["agent"]: row for row in results["runs"]}


def workspace_files(root: Path, run: dict) -> list[str]:
    """The files of the run's final workspace, as the agent left them."""
    record = read_trace(run["trace"])[-1]
    dest = root / "final"
    SnapshotStore(Path(run["run_dir"]) / "snapshots").materialize(record["snapshot"], dest)
    return sorted(path.relative_to(dest).as_posix() for path in dest.rglob("*") if path.is_file())


def assert_baseline_and_reference_pass(root: Path, result: pytest.RunResult) -> None:
    result.assert_outcomes(passed=2)
    found = runs(root)
    assert found["baseline"]["passed"] and abs(found["baseline"]["improvement"]) < 0.01
    assert found["reference"]["success"] and found["reference"]["score"] < 1.0
    assert workspace_files(root, found["reference"]) == ["data_description.txt", "submission.csv", "test.csv",
                                                         "train.csv", "train.py"]  # env/ as prepared, no scripts/
    assert read_trace(found["baseline"]["trace"])[0]["data_files"] == ["test.csv", "train.csv"]


@pytest.mark.slow
def test_a_local_folder_runs_as_a_task(pytester: pytest.Pytester, project: Path, mlab_cache: Path) -> None:
    write_folder(project / "benchmarks" / "tab")
    write_reference(project / "task_assets" / "tab")
    (project / "specs" / "tasks" / "tab.yaml").write_text(spec(
        "tab", "  folder: ../../benchmarks/tab", extra="assets: task_assets/tab\nreference: {script: train.py}\n"))
    result = run_specs(pytester, "--mlab-data=full", "--mlab-prepare", cache_dir=mlab_cache)
    assert_baseline_and_reference_pass(project, result)
    assert (project / "benchmarks" / "tab" / "env").is_dir() and not (project / "benchmarks" / "tab" / "env" /
                                                                        "train.csv").exists()


@pytest.mark.slow
def test_a_folder_in_an_archive_is_listed_then_fetched_by_the_prepare_step(
        pytester: pytest.Pytester, project: Path, mlab_cache: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    digest = tar_folder(write_folder(tmp_path / "tab"), served / "bench.tar.gz", "MLAgentBench/benchmarks/tab")
    (project / "specs" / "tasks" / "reference").mkdir()
    (project / "specs" / "tasks" / "reference" / "train.py").write_text(REFERENCE)
    with FileServer(served) as server:
        (project / "specs" / "tasks" / "tab.yaml").write_text(spec("tab", (
            f"  url: {server.url('bench.tar.gz')}\n  sha256: {digest}\n  path: MLAgentBench/benchmarks/tab"),
            extra="reference: {script: train.py}\n"))
        listed = run_specs(pytester, "--mlab-data=full", "-rs", "--mlab-allow-skips", cache_dir=mlab_cache)
        assert server.log == []  # listing the items fetched nothing
        listed.assert_outcomes(skipped=2)
        listed.stdout.fnmatch_lines(["*the 'full' data of task 'tab' is not prepared*run `pytest-mlab prepare tab "
                                     "--data full` first*"])
        result = run_specs(pytester, "--mlab-data=full", "--mlab-prepare", cache_dir=mlab_cache)
    assert_baseline_and_reference_pass(project, result)
    assert [name for name, _range in server.log] == ["bench.tar.gz"]


@pytest.mark.slow
def test_an_archive_that_fails_its_checksum_stops_the_session_and_nothing_is_unpacked(
        pytester: pytest.Pytester, project: Path, mlab_cache: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    tar_folder(write_folder(tmp_path / "tab"), served / "bench.tar.gz", "tab")
    with FileServer(served) as server:
        (project / "specs" / "tasks" / "tab.yaml").write_text(spec(
            "tab", f"  url: {server.url('bench.tar.gz')}\n  sha256: {'ab' * 32}\n  path: tab"))
        result = run_specs(pytester, "--mlab-data=full", "--mlab-prepare", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output_of(result)
    assert "the downloaded file" in text and f"expected {'ab' * 32}; it was deleted" in text, text
    assert_no_traceback(text)
    downloads = mlab_cache / "downloads" / "tab"
    assert [path.name for path in downloads.iterdir()] == []  # neither the archive nor anything unpacked
    assert not (mlab_cache / "tab" / "full").exists()

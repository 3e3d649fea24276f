"""MLAgentBench folders as tasks, end to end through real pytest sub-runs: the baseline agent
reproduces the baseline and the reference agent succeeds, with a local folder and with one fetched
from an archive on a loopback server; an archive that fails its checksum stops the session and
leaves nothing unpacked; a starter that crashes fails its baseline item unless it is a skeleton;
a folder without a reference solution skips the reference agent's item."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mlab.cli import main
from pytest_mlab.trace import SnapshotStore, read_trace
from tests.data.fakes import FileServer
from tests.helpers import ACTIONS_DIR, AGENTS_DIR, assert_no_traceback, output_of, run_specs
from tests.mlagentbench_folder import EVAL, REFERENCE, STARTER, spec, tar_folder, write_folder, write_reference


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
    assert f"expected {'ab' * 32}; it was deleted. The archive does not match the spec's mlagentbench.sha256: " \
           f"nothing was unpacked, and the folder's scripts/prepare.py never ran" in text, text
    assert "with the folder at mlagentbench.url (fetched, checked, then its scripts/prepare.py) failed" in text, text
    assert_no_traceback(text)
    downloads = mlab_cache / "downloads" / "tab"
    assert [path.name for path in downloads.iterdir()] == []  # neither the archive nor anything unpacked
    assert not (mlab_cache / "tab" / "full").exists()


# The original vectorization's starter under NumPy 2, and its eval.py, which scores a missing file 1e10
NUMPY_2_CRASH = STARTER.replace("with open(\"submission.csv\"", "raise ValueError(\"setting an array element with a "
                                                               "sequence.\")\nwith open(\"submission.csv\"")
EVAL_WITH_FALLBACK = EVAL.replace("def get_score(", "def _score(") + """

def get_score(submission_folder="../env"):
    try:
        return _score(submission_folder)
    except Exception:
        return 1e10
"""
# The original house-price's starter: a skeleton that stops at the model it leaves unwritten
SKELETON = STARTER.replace("mean = ", "print(\"Validation MAE:\", valid_mae)\nmean = ")
STALE = "id,y\n" + "".join(f"{index},0\n" for index in range(300, 400))  # a valid submission left in env/


def by_task(root: Path) -> dict[str, dict]:
    results = json.loads((root / "mlab-results" / "results.json").read_text())
    return {row["task"]: row for row in results["runs"]}


@pytest.mark.slow
def test_a_starter_that_crashes_fails_its_baseline_item_unless_it_is_a_skeleton(
        pytester: pytest.Pytester, project: Path, mlab_cache: Path) -> None:
    assert NUMPY_2_CRASH != STARTER and EVAL_WITH_FALLBACK != EVAL and SKELETON != STARTER
    folders = {"fallback": {"env/train.py": NUMPY_2_CRASH, "scripts/eval.py": EVAL_WITH_FALLBACK},
               "stale": {"env/train.py": NUMPY_2_CRASH, "env/submission.csv": STALE},
               "skeleton": {"env/train.py": SKELETON}}
    baselines = {"fallback": "baseline: {pinned: {full: 5.0}}\n",  # 1e10 does not beat the pin
                 "stale": "baseline: {full: 10.0, tolerance: 5}\n",  # the stale file reproduces it
                 "skeleton": "baseline: {pinned: {full: 1e10}}\n"}
    for name, files in folders.items():
        write_folder(project / "benchmarks" / name, **files)
        text = spec(name, f"  folder: ../../benchmarks/{name}", baseline=None, extra=baselines[name])
        if name == "fallback":  # as the spec: eval.py itself scores the missing file, as the original does
            text = text.replace(", submission: submission.csv", "")
        (project / "specs" / "tasks" / f"{name}.yaml").write_text(text)
    result = run_specs(pytester, "--mlab-data=full", "--mlab-prepare", "--agent=baseline", cache_dir=mlab_cache)
    result.assert_outcomes(passed=1, failed=2)
    found = by_task(project)
    assert found["fallback"]["valid"] and found["fallback"]["score"] == 1e10 and not found["fallback"]["passed"]
    assert found["fallback"]["failure"] == "baseline mismatch"
    for name in ("fallback", "stale"):
        message = found[name]["message"]
        assert message.startswith("the unchanged starter train.py failed with exit code 1, yet the workspace was "
                                  "scored "), message
        assert message.endswith("\n  ValueError: setting an array element with a sequence."), message
    assert found["skeleton"]["passed"] and not found["skeleton"]["valid"]
    assert found["skeleton"]["message"].startswith(
        "the unchanged starter train.py failed with exit code 1 (NameError: name 'valid_mae' is not defined) and "
        "writes no valid submission, as a skeleton does"), found["skeleton"]["message"]
    # judged again from the saved trace by `pytest-mlab rescore`: the same verdicts
    assert main(["rescore", str(project / "mlab-results"), "--root", str(project), "--cache", str(mlab_cache)]) == 0
    again = by_task(project)
    assert {name: (row["passed"], row["message"]) for name, row in again.items()} == {
        name: (row["passed"], row["message"]) for name, row in found.items()}


@pytest.mark.slow
def test_a_folder_without_a_reference_solution_skips_the_reference_agents_item(
        pytester: pytest.Pytester, project: Path, mlab_cache: Path) -> None:
    write_folder(project / "benchmarks" / "tab")
    (project / "specs" / "tasks" / "tab.yaml").write_text(spec("tab", "  folder: ../../benchmarks/tab"))
    result = run_specs(pytester, "--mlab-data=full", "--mlab-prepare", "-rs", cache_dir=mlab_cache)
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.OK  # the baseline ran: a missing reference fails nothing
    result.stdout.fnmatch_lines(["SKIPPED * task 'tab' has no reference solution for agent 'reference': "
                                 "*benchmarks/tab/reference/ does not exist; put the solution's files there*"])
    assert set(runs(project)) == {"baseline"}  # the reference agent never started
    (project / "benchmarks" / "tab" / "reference").mkdir()  # an empty folder is no solution either
    again = run_specs(pytester, "--mlab-data=full", "--agent=reference", "-rs", cache_dir=mlab_cache)
    again.assert_outcomes(skipped=1)
    again.stdout.fnmatch_lines(["SKIPPED * task 'tab' has no reference solution *reference/ holds no files*"])
    assert again.ret == pytest.ExitCode.USAGE_ERROR  # nothing ran: as for any unmet requirement

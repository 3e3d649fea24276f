"""When a step's snapshot leaves files out, the agent is told in that step's observation and the
trace records which files and why."""

from __future__ import annotations

from pytest_mlab.env import ReadOnlyRules
from pytest_mlab.spec.models import Limits
from pytest_mlab.trace import read_trace
from tests.env.support import make_environment


def steps(env) -> list[dict]:
    return [record for record in read_trace(env.trace.path) if record["type"] == "step"]


def test_a_file_over_the_size_limit_is_named_in_the_observation_and_the_trace(tmp_path):
    env = make_environment(tmp_path, limits=Limits(max_steps=10, snapshot_file_size=1000))
    observation = env.step("Write File", {"file_name": "big.txt", "content": "x" * 3000})
    assert observation.endswith(
        "\n\nNote: 1 file was not saved in the workspace snapshot and will not be graded: "
        "big.txt (2.9 KiB, over the 1000 bytes file size limit).")
    record = steps(env)[-1]
    assert record["observation"] == observation
    assert record["omitted"] == {"count": 1, "files": [["big.txt", "2.9 KiB, over the 1000 bytes file size limit"]]}
    assert "big.txt" not in env.snapshots.manifest(record["snapshot"])["files"]


def test_a_step_within_the_limits_has_no_note(tmp_path):
    env = make_environment(tmp_path, limits=Limits(max_steps=10, snapshot_file_size=1000))
    observation = env.step("Write File", {"file_name": "small.txt", "content": "x" * 10})
    assert "Note:" not in observation
    assert "omitted" not in steps(env)[-1]


def test_the_note_names_a_few_files_and_counts_the_rest(tmp_path):
    files = {f"f{index}.txt": str(index) for index in range(9)}
    env = make_environment(tmp_path, files=files, limits=Limits(max_steps=10, snapshot_files=2))
    observation = env.step("List Files", {"dir_path": "."})
    note = observation.split("\n\n")[-1]
    assert note.startswith("Note: 7 files were not saved in the workspace snapshot and will not be graded: "
                           "f2.txt (over the limit of 2 files in one snapshot), ")
    assert note.endswith(", and 2 more.")
    assert note.count("(over the limit") == 5
    record = steps(env)[-1]
    assert record["omitted"]["count"] == 7 and len(record["omitted"]["files"]) == 7


def test_read_only_data_never_counts_against_the_limits(tmp_path):
    env = make_environment(tmp_path, files={"train.csv": "x" * 5000, "train.py": "print(1)\n"},
                           read_only=ReadOnlyRules(frozenset({"train.csv"})),
                           limits=Limits(max_steps=10, snapshot_files=1, snapshot_file_size=1000))
    observation = env.step("List Files", {"dir_path": "."})
    assert "Note:" not in observation
    assert set(env.snapshots.manifest(env.last_snapshot)["files"]) == {"train.csv", "train.py"}


def test_the_final_snapshot_records_what_it_left_out(tmp_path):
    env = make_environment(tmp_path, limits=Limits(max_steps=10, snapshot_file_size=1000))
    (env.sandbox.workspace / "late.bin").write_bytes(b"y" * 5000)  # left by the agent's last process
    snapshot = env.final_snapshot()
    (record,) = [r for r in read_trace(env.trace.path) if r["type"] == "snapshot"]
    assert record["snapshot"] == snapshot
    assert record["omitted"]["files"] == [["late.bin", "4.9 KiB, over the 1000 bytes file size limit"]]
    assert record["note"].startswith("Note: 1 file was not saved")

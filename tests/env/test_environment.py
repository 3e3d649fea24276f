"""The Environment: dispatch, argument checking, limits, trace and snapshots per step."""

from __future__ import annotations

import json

from pytest_mlab.env import ReadOnlyRules
from pytest_mlab.spec.models import Limits
from pytest_mlab.trace import read_trace
from tests.env.support import make_environment


def test_unknown_action_is_an_observation_with_a_suggestion(tmp_path):
    env = make_environment(tmp_path)
    observation = env.step("List File", {"dir_path": "."})
    assert observation.startswith("EnvError: invalid action 'List File'. Did you mean 'List Files'?")
    assert "Available actions: List Files" in observation
    assert not env.done and env.steps == 1


def test_action_outside_the_agents_list_is_refused(tmp_path):
    env = make_environment(tmp_path, actions=("Execute Script", "Final Answer"))
    observation = env.step("Write File", {"file_name": "x.py", "content": "print(1)"})
    assert observation.startswith("EnvError: invalid action 'Write File'")
    assert not (env.sandbox.workspace / "x.py").exists()


def test_missing_unknown_and_mistyped_arguments(tmp_path):
    env = make_environment(tmp_path, files={"a.py": "x = 1\n"})
    missing = env.step("Read File", {})
    assert missing.startswith("EnvError: Read File needs the argument 'file_name'")
    assert '{"file_name": "[a file relative to the workspace]"}' in missing
    unknown = env.step("Read File", {"file_name": "a.py", "mode": "r"})
    assert unknown.startswith("EnvError: Read File has no argument 'mode'")
    wrong = env.step("Inspect Script Lines", {"script_name": "a.py", "start_line_number": "one",
                                              "end_line_number": 2})
    assert wrong == "EnvError: Inspect Script Lines: argument 'start_line_number' must be an integer, got 'one'"
    null = env.step("Read File", {"file_name": None})
    assert null == "EnvError: Read File: argument 'file_name' must be a string, got None"
    not_object = env.step("Read File", ["a.py"])
    assert not_object.startswith("EnvError: the input of Read File must be a JSON object")


def test_numbers_sent_as_strings_are_accepted(tmp_path):
    env = make_environment(tmp_path, files={"a.py": "one\ntwo\nthree\n"})
    observation = env.step("Inspect Script Lines", {"script_name": "a.py", "start_line_number": "2",
                                                    "end_line_number": 3.0})
    assert observation.endswith("two\nthree")


def test_step_limit_ends_the_run(tmp_path):
    env = make_environment(tmp_path, limits=Limits(max_steps=2))
    env.step("List Files", {"dir_path": "."})
    assert not env.done
    env.step("List Files", {"dir_path": "."})
    assert env.done and env.end_reason == "step limit"
    after = env.step("List Files", {"dir_path": "."})
    assert after.startswith("EnvError: the run has ended (step limit)")
    assert env.steps == 2


def test_time_limit_ends_the_run(tmp_path):
    env = make_environment(tmp_path, limits=Limits(max_time=0.001),
                           files={"slow.py": "import time\ntime.sleep(0.05)\n"})
    env.step("Execute Script", {"script_name": "slow.py"})
    assert env.end_reason == "timeout"


def test_final_answer_ends_the_run_and_keeps_the_answer(tmp_path):
    env = make_environment(tmp_path)
    env.step("Final Answer", {"final_answer": "accuracy 0.9"})
    assert env.done and env.end_reason == "final answer" and env.final_answer == "accuracy 0.9"


def test_every_step_is_in_the_trace_with_a_snapshot(tmp_path):
    env = make_environment(tmp_path)
    env.step("Write File", {"file_name": "a.txt", "content": "one"})
    env.step("Nope", {})
    env.step("Write File", {"file_name": "a.txt", "content": "two"})
    records = [r for r in read_trace(tmp_path / "trace.jsonl") if r["type"] == "step"]
    assert [r["step"] for r in records] == [1, 2, 3]
    assert [r["error"] for r in records] == [False, True, False]
    assert records[0]["snapshot"] != records[2]["snapshot"]
    assert records[0]["snapshot"] == records[1]["snapshot"]  # nothing changed in between
    first = env.snapshots.manifest(records[0]["snapshot"])
    assert "a.txt" in json.dumps(first)


def test_trace_lines_are_on_disk_before_the_run_ends(tmp_path):
    env = make_environment(tmp_path)
    env.step("List Files", {"dir_path": "."})
    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["action"] == "List Files"


def test_read_only_data_is_linked_into_snapshots_not_copied(tmp_path):
    env = make_environment(tmp_path, files={"train.csv": "a,b\n" * 1000},
                           read_only=ReadOnlyRules(frozenset({"train.csv"})))
    for _ in range(5):
        env.step("List Files", {"dir_path": "."})
    assert env.snapshots.stored_bytes() < 10_000 + 4000 * 2

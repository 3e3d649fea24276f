"""File actions through the Environment, including every escape attempt and read-only rule."""

from __future__ import annotations

import os

import pytest

from pytest_mlab.env import ReadOnlyRules
from tests.env.support import make_environment

ESCAPES = ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "~/.bashrc", "sub/../../../etc/passwd"]


@pytest.fixture
def env(tmp_path):
    (tmp_path / "outside.txt").write_text("secret")
    return make_environment(tmp_path, files={"train.py": "print('hi')\n", "train.csv": "x\n1\n",
                                             "sub/notes.txt": "n"},
                            read_only=ReadOnlyRules(frozenset({"train.csv"}), ("data/*",)))


def test_list_files_marks_folders(env):
    assert env.step("List Files", {"dir_path": "."}) == "sub/\ntrain.csv\ntrain.py"
    assert env.step("List Files", {"dir_path": "./sub"}) == "notes.txt"


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize("action, arguments", [
    ("Read File", {}), ("List Files", {}), ("Write File", {"content": "x"}), ("Append File", {"content": "x"}),
])
def test_escapes_are_refused(env, tmp_path, path, action, arguments):
    key = "dir_path" if action == "List Files" else "file_name"
    observation = env.step(action, {key: path, **arguments})
    assert observation.startswith("EnvError:"), observation
    assert "secret" not in observation and "root:" not in observation
    assert (tmp_path / "outside.txt").read_text() == "secret"


def test_symlink_leading_out_is_refused(env, tmp_path):
    os.symlink(tmp_path / "outside.txt", env.sandbox.workspace / "link.txt")
    assert env.step("Read File", {"file_name": "link.txt"}).startswith("EnvError:")
    assert env.step("Write File", {"file_name": "link.txt", "content": "pwned"}).startswith("EnvError:")
    assert (tmp_path / "outside.txt").read_text() == "secret"


def test_sibling_directory_with_the_workspace_prefix_is_refused(env, tmp_path):
    sibling = tmp_path / "ws-evil"
    sibling.mkdir()
    (sibling / "loot.txt").write_text("secret")
    observation = env.step("Read File", {"file_name": "../ws-evil/loot.txt"})
    assert observation.startswith("EnvError:")


def test_copy_out_of_or_into_outside_is_refused(env, tmp_path):
    assert env.step("Copy File", {"source": "../outside.txt", "destination": "stolen.txt"}).startswith("EnvError:")
    assert env.step("Copy File", {"source": "train.py", "destination": "../planted.py"}).startswith("EnvError:")
    assert not (tmp_path / "planted.py").exists()
    assert not (env.sandbox.workspace / "stolen.txt").exists()


@pytest.mark.parametrize("name", ["train.csv", "./train.csv", "sub/../train.csv", "data/new.csv"])
def test_read_only_files_cannot_be_written_appended_or_copied_over(env, name):
    for action, arguments in [("Write File", {"file_name": name, "content": "x"}),
                              ("Append File", {"file_name": name, "content": "x"}),
                              ("Copy File", {"source": "train.py", "destination": name})]:
        observation = env.step(action, arguments)
        assert observation.startswith("EnvError:") and "read-only" in observation, observation
    assert (env.sandbox.workspace / "train.csv").read_text() == "x\n1\n"


def test_symlink_to_a_read_only_file_cannot_be_written(env):
    os.symlink("train.csv", env.sandbox.workspace / "alias.csv")
    observation = env.step("Write File", {"file_name": "alias.csv", "content": "x"})
    assert "read-only" in observation
    assert (env.sandbox.workspace / "train.csv").read_text() == "x\n1\n"


def test_read_only_files_can_be_read_and_copied_from(env):
    assert env.step("Read File", {"file_name": "./train.csv"}) == "x\n1\n"
    assert env.step("Copy File", {"source": "train.csv", "destination": "mine.csv"}) == \
        "File train.csv copied to mine.csv."
    assert (env.sandbox.workspace / "mine.csv").read_text() == "x\n1\n"


def test_write_append_and_undo(env):
    assert env.step("Write File", {"file_name": "train.py", "content": "print(2)\n"}) == \
        "File train.py written successfully."
    env.step("Append File", {"file_name": "train.py", "content": "print(3)\n"})
    assert (env.sandbox.workspace / "train.py").read_text() == "print(2)\nprint(3)\n"
    first_undo = env.step("Undo Edit Script", {"script_name": "train.py"})
    assert first_undo.endswith("print(2)\n")
    second_undo = env.step("Undo Edit Script", {"script_name": "train.py"})
    assert second_undo.endswith("print('hi')\n")
    assert env.step("Undo Edit Script", {"script_name": "train.py"}) == \
        "EnvError: there is no change to undo for 'train.py'"


def test_undo_of_a_created_file_explains_there_is_nothing_earlier(env):
    env.step("Write File", {"file_name": "new.py", "content": "x"})
    assert "did not exist before" in env.step("Undo Edit Script", {"script_name": "new.py"})


def test_write_creates_folders(env):
    env.step("Write File", {"file_name": "models/net.py", "content": "x = 1"})
    assert (env.sandbox.workspace / "models/net.py").read_text() == "x = 1"


def test_read_missing_and_binary_files(env):
    assert env.step("Read File", {"file_name": "nope.txt"}).startswith("EnvError:")
    (env.sandbox.workspace / "blob.bin").write_bytes(b"\xff\xfe\x00\x01")
    assert "not a UTF-8 text file" in env.step("Read File", {"file_name": "blob.bin"})


def test_copy_of_a_missing_file(env):
    assert env.step("Copy File", {"source": "nope.py", "destination": "b.py"}) == \
        "EnvError: cannot copy 'nope.py': no such file in the workspace"


def test_inspect_script_lines(env):
    env.step("Write File", {"file_name": "long.py", "content": "\n".join(f"line{i}" for i in range(1, 251))})
    observation = env.step("Inspect Script Lines", {"script_name": "long.py", "start_line_number": 10,
                                                    "end_line_number": 12})
    assert observation == "Here are the lines (the file ends at line 250):\n\nline10\nline11\nline12"
    most = env.step("Inspect Script Lines", {"script_name": "long.py", "start_line_number": 1,
                                             "end_line_number": 101})  # 101 lines, as the paper's environment allows
    assert most.endswith("\n\n" + "\n".join(f"line{i}" for i in range(1, 102)))
    too_many = env.step("Inspect Script Lines", {"script_name": "long.py", "start_line_number": 1,
                                                 "end_line_number": 102})
    assert too_many == ("EnvError: the number of lines shown at once is limited to 100; "
                        "ask for 1 to 101")
    backwards = env.step("Inspect Script Lines", {"script_name": "long.py", "start_line_number": 5,
                                                  "end_line_number": 4})
    assert backwards.startswith("EnvError: line numbers must satisfy")
    past_end = env.step("Inspect Script Lines", {"script_name": "long.py", "start_line_number": 300,
                                                 "end_line_number": 310})
    assert past_end == "EnvError: long.py has only 250 lines"

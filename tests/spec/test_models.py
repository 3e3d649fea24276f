"""What a task ships into a workspace: its files, never Python's bytecode caches."""

from __future__ import annotations

from pathlib import Path

from pytest_mlab.spec.models import shipped_files


def test_bytecode_caches_left_by_an_import_are_not_shipped(tmp_path: Path) -> None:
    env = tmp_path / "env"
    (env / "__pycache__").mkdir(parents=True)
    (env / "lib" / "__pycache__").mkdir(parents=True)
    (env / "train.py").write_text("print(1)\n")
    (env / "lib" / "util.py").write_text("X = 1\n")
    (env / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\xa7\r\r\n")  # not UTF-8, not the task's
    (env / "lib" / "__pycache__" / "util.cpython-311.pyc").write_bytes(b"\xa7")
    (env / "stale.pyc").write_bytes(b"\xa7")
    assert [relative for _path, relative in shipped_files(env)] == ["lib/util.py", "train.py"]


def test_a_missing_folder_ships_nothing(tmp_path: Path) -> None:
    assert shipped_files(tmp_path / "reference") == ()

"""What a step asks of the disk: one whole-file-system sync for its snapshot when the snapshot
stored something, and never an fsync per file (the workspace write, the trace record, the
snapshot's blobs and manifest, the run's status file all go without one)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_mlab.trace.snapshots import durability
from tests.env.support import make_environment

STEPS = [
    ("Write File", {"file_name": "a.py", "content": "print(1)\n"}),
    ("Copy File", {"source": "a.py", "destination": "b.py"}),
    ("Append File", {"file_name": "b.py", "content": "print(2)\n"}),
    ("Undo Edit Script", {"script_name": "b.py"}),
    ("Execute Script", {"script_name": "a.py"}),
    ("List Files", {"dir_path": "."}),
]


@pytest.fixture
def disk_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real_sync = durability.sync_filesystem
    monkeypatch.setattr(durability, "sync_filesystem", lambda path: (calls.append("syncfs"), real_sync(path))[1])
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda fd, real=real, name=name: (calls.append(name), real(fd))[1])
    return calls


def test_each_step_costs_at_most_one_sync_and_no_fsync_per_file(tmp_path: Path, disk_calls: list[str]) -> None:
    env = make_environment(tmp_path)
    try:
        for action, arguments in STEPS:
            before = len(disk_calls)
            env.step(action, arguments)
            env.snapshots.wait_durable()  # the step's sync runs in the background
            made = disk_calls[before:]
            assert "fsync" not in made and "fdatasync" not in made, f"{action} synced a file: {made}"
            assert made.count("syncfs") <= 1, f"{action} synced the file system {made.count('syncfs')} times"
        assert disk_calls.count("syncfs") == 3, "Write, Copy and Append File, the steps that changed the workspace made their snapshots durable"
    finally:
        env.sandbox.close()
        env.trace.close()

"""The runner writes a run's result record only once the snapshot it names is on disk: the
snapshot's sync runs in the background, and the result record is what --mlab-resume trusts."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from pytest_mlab.env import Environment
from pytest_mlab.trace import TraceWriter
from pytest_mlab.trace.snapshots import durability
from tests.helpers import toy_run


def test_the_result_record_waits_for_the_final_snapshots_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    final, result_written = threading.Event(), threading.Event()
    real_sync, real_write, real_final = durability.sync_filesystem, TraceWriter.write, Environment.final_snapshot

    def sync(path: Path) -> None:
        if final.is_set():  # the final snapshot's sync holds out until the result record is written, or 2 s
            result_written.wait(2)
        real_sync(path)
        log.append("synced")

    def write(self: TraceWriter, record: dict[str, Any]) -> None:
        if record.get("type") == "result":
            result_written.set()
            log.append("result")
        real_write(self, record)

    def final_snapshot(self: Environment) -> str:
        (self.sandbox.workspace / "left_behind.txt").write_text("a dying run's last file\n")  # a new blob: a sync
        final.set()
        return real_final(self)

    monkeypatch.setattr(durability, "sync_filesystem", sync)
    monkeypatch.setattr(TraceWriter, "write", write)
    monkeypatch.setattr(Environment, "final_snapshot", final_snapshot)
    assert toy_run(tmp_path).passed
    assert log[-2:] == ["synced", "result"]

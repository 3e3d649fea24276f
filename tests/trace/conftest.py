"""Fixtures of the snapshot tests: an empty workspace folder and a store beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.trace import SnapshotStore


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def store(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / "store")

"""Helpers shared by the snapshot tests: workspace files and a count of what the store hashes."""

from __future__ import annotations

from pathlib import Path

import blake3
import pytest

from pytest_mlab.trace.snapshots import blobs


def write(path: Path, text: str, *, executable: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)
    return path


def blob_files(store_root: Path) -> list[Path]:
    return [p for p in (store_root / "blobs").rglob("*") if p.is_file()]


def count_hashed_bytes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per file content hash the store computes: the bytes it fed that hash."""
    sizes: list[int] = []

    class Counting:
        def __init__(self) -> None:
            self._hash = blake3.blake3()
            self._index = len(sizes)
            sizes.append(0)

        def update(self, data: bytes) -> None:
            sizes[self._index] += len(data)
            self._hash.update(data)

        def hexdigest(self) -> str:
            return self._hash.hexdigest()

    monkeypatch.setattr(blobs, "_new_hasher", Counting)
    return sizes

"""The snapshot's one sync runs in the background: a step gets its snapshot id before the disk
has it, and whatever must not run ahead of the disk (the next snapshot, settle, the run's result
record) waits for the sync first and raises its error. A power cut before the sync can lose the
last snapshot's blobs: every reader then fails with a clear error, never a crash."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mlab.errors import MlabError, TraceError
from pytest_mlab.trace import SnapshotStore
from pytest_mlab.trace.snapshots import durability
from pytest_mlab.trace.snapshots import store as store_module
from tests.trace.support import blob_files, write


class HeldSync:
    """A sync that does not finish until released; the log says what happened in which order."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()
        self.error: OSError | None = None

    def __call__(self, path: Path) -> None:
        self.started.set()
        self.release.wait()
        self.log.append("synced")
        if self.error is not None:
            raise self.error

    def release_once_waited_on(self) -> threading.Thread:
        """Release the sync from another thread once this one is (very likely) blocked on it: the
        order in the log is what the test checks, however long this takes."""
        def later() -> None:
            self.started.wait()
            threading.Event().wait(0.05)
            self.release.set()
        thread = threading.Thread(target=later)
        thread.start()
        return thread


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldSync]:
    sync = HeldSync()
    monkeypatch.setattr(durability, "sync_filesystem", sync)
    real_scan = store_module.scan_workspace
    monkeypatch.setattr(store_module, "scan_workspace", lambda *args: (sync.log.append("scanned"), real_scan(*args))[1])
    yield sync
    sync.release.set()


def test_a_snapshot_id_is_returned_before_its_sync_finishes(tmp_path: Path, held: HeldSync) -> None:
    write(tmp_path / "ws" / "a.txt", "a\n")
    store = SnapshotStore(tmp_path / "store")
    snap = store.snapshot(tmp_path / "ws")
    assert held.started.wait(10), "the snapshot started its sync"
    assert held.log == ["scanned"], "the id came back while the sync was still under way"
    assert store.read_file(snap.id, "a.txt") == b"a\n"
    held.release.set()
    store.wait_durable()
    assert held.log == ["scanned", "synced"]


def test_the_next_snapshot_waits_for_the_sync_before_it_scans(tmp_path: Path, held: HeldSync) -> None:
    write(tmp_path / "ws" / "a.txt", "a\n")
    store = SnapshotStore(tmp_path / "store")
    store.snapshot(tmp_path / "ws")
    releaser = held.release_once_waited_on()
    write(tmp_path / "ws" / "a.txt", "b\n")
    store.snapshot(tmp_path / "ws")
    releaser.join()
    assert held.log[:3] == ["scanned", "synced", "scanned"]


@pytest.mark.parametrize("finish", ["settle", "wait_durable"])
def test_settle_and_the_result_record_wait_for_the_sync(tmp_path: Path, held: HeldSync, finish: str) -> None:
    write(tmp_path / "ws" / "a.txt", "a\n")
    store = SnapshotStore(tmp_path / "store")
    store.snapshot(tmp_path / "ws")
    releaser = held.release_once_waited_on()
    getattr(store, finish)()
    assert held.log == ["scanned", "synced"]
    releaser.join()


def test_a_failed_background_sync_raises_at_the_next_wait_and_syncs_again(tmp_path: Path, held: HeldSync) -> None:
    write(tmp_path / "ws" / "a.txt", "a\n")
    store = SnapshotStore(tmp_path / "store")
    held.error = OSError(5, "Input/output error")
    held.release.set()
    snap = store.snapshot(tmp_path / "ws")  # the step itself goes on
    with pytest.raises(TraceError, match=r"cannot make the snapshots in .*store durable: .*Input/output error"):
        store.snapshot(tmp_path / "ws")
    held.error = None
    again = store.snapshot(tmp_path / "ws")
    assert again.id == snap.id
    store.settle()
    assert held.log.count("synced") == 2, "nothing new, but the failed sync is not trusted: synced again"


def test_settle_raises_a_failed_sync_and_still_settles_the_data(
    tmp_path: Path, held: HeldSync, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled: list[object] = []
    monkeypatch.setattr(store_module.data_digests, "settle", settled.append)
    write(tmp_path / "ws" / "a.txt", "a\n")
    store = SnapshotStore(tmp_path / "store")
    held.error = OSError(5, "Input/output error")
    held.release.set()
    store.snapshot(tmp_path / "ws")
    with pytest.raises(TraceError, match="durable"):
        store.settle()
    assert settled == [None]


# ---------------------------------------------------------------------- a sync lost in a power cut


def lost_last_snapshot(tmp_path: Path) -> tuple[SnapshotStore, str, str]:
    """Two snapshots, then the second one's blob gone, as a power cut before its sync may leave it."""
    workspace = tmp_path / "ws"
    write(workspace / "train.py", "print(1)\n")
    with SnapshotStore(tmp_path / "store") as store:
        first = store.snapshot(workspace).id
        kept = set(blob_files(store.root))
        write(workspace / "train.py", "print(2)\n")
        second = store.snapshot(workspace).id
    for blob in set(blob_files(store.root)) - kept:
        blob.unlink()
    return SnapshotStore(tmp_path / "store", fsync=False), first, second


def test_every_reader_of_a_snapshot_whose_blob_was_lost_fails_clearly(tmp_path: Path) -> None:
    store, first, second = lost_last_snapshot(tmp_path)
    missing = r"store .* is corrupt: blob \w+ for 'train.py' of snapshot \w+ is missing"
    with pytest.raises(TraceError, match=missing):
        store.read_file(second, "train.py")
    with pytest.raises(TraceError, match=missing):
        store.materialize_regular(second, tmp_path / "graded")
    assert store.diff(first, second)["changed"] == ["train.py"], "manifests alone still read"
    store.materialize_regular(first, tmp_path / "earlier")
    assert (tmp_path / "earlier" / "train.py").read_text() == "print(1)\n"


def test_a_blob_cut_short_is_reported_not_graded(tmp_path: Path) -> None:
    store, first, second = lost_last_snapshot(tmp_path)
    (blob,) = [path for path in blob_files(store.root) if path.read_bytes() == b"print(1)\n"]
    blob.chmod(0o644)
    blob.write_bytes(b"pri")
    cut = r"blob \w+ for 'train.py' of snapshot \w+ does not have the size its manifest records"
    with pytest.raises(TraceError, match=cut):
        store.read_file(first, "train.py")
    with pytest.raises(TraceError, match=cut):
        store.materialize_regular(first, tmp_path / "graded")


def test_a_manifest_cut_short_is_reported(tmp_path: Path) -> None:
    store, _first, second = lost_last_snapshot(tmp_path)
    (store.root / "manifests" / f"{second}.json").write_bytes(b"")
    with pytest.raises(TraceError, match=f"{second}.json is corrupt"):
        store.materialize_regular(second, tmp_path / "graded")


def test_a_lost_manifest_is_an_unknown_snapshot(tmp_path: Path) -> None:
    store, _first, second = lost_last_snapshot(tmp_path)
    (store.root / "manifests" / f"{second}.json").unlink()
    with pytest.raises(TraceError, match=f"no snapshot '{second}'"):
        store.materialize_regular(second, tmp_path / "graded")
    assert issubclass(TraceError, MlabError), "the runner's step scoring falls back on any MlabError"


def test_a_later_store_stores_the_lost_content_again(tmp_path: Path) -> None:
    store, _first, second = lost_last_snapshot(tmp_path)
    again = SnapshotStore(tmp_path / "store").snapshot(tmp_path / "ws")
    assert again.id == second and again.new_bytes > 0
    assert store.read_file(second, "train.py") == b"print(2)\n"

"""What a snapshot costs: each byte hashed once, read-only data hashed once per process, one sync
per snapshot, and a file written just before a snapshot cached after a wait of one clock tick."""

from __future__ import annotations

import os
import time
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import blake3
import pytest

from pytest_mlab.trace import SnapshotStore
from pytest_mlab.trace.snapshots import data_digests, digest_cache
from pytest_mlab.trace.snapshots import scan as scan_module
from pytest_mlab.trace.snapshots import durability
from tests.trace.support import count_hashed_bytes, write

MB = 1024 * 1024
DATA = 4 * MB


@pytest.fixture(autouse=True)
def empty_data_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[OrderedDict]:
    """Each test starts with no read-only digests remembered from another, and gives its leases
    back (a test that writes a leased file would wait for the lease-break time)."""
    held: OrderedDict = OrderedDict()
    monkeypatch.setattr(data_digests, "_held", held)
    yield held
    data_digests.settle(None)


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every sync the store asks for: whole-snapshot syncs and any per-file fsync."""
    calls: list[str] = []
    real_sync = durability.sync_filesystem
    real_fsync = os.fsync

    def sync_filesystem(path):  # type: ignore[no-untyped-def]
        calls.append("syncfs")
        real_sync(path)

    def fsync(fd):  # type: ignore[no-untyped-def]
        calls.append("fsync")
        real_fsync(fd)

    monkeypatch.setattr(durability, "sync_filesystem", sync_filesystem)
    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def old_file(path: Path, size: int, fill: bytes) -> Path:
    """A file last changed an hour ago, like prepared data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(fill * size)
    then = time.time() - 3600
    os.utime(path, (then, then))
    return path


def workspace_with_data(root: Path, cached: Path) -> Path:
    """A run's workspace: the data file hard-linked from the cache, as the runner links it."""
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    os.link(cached, workspace / "train.csv")
    write(workspace / "train.py", "print('starter')\n")
    return workspace


# ---------------------------------------------------------------------- hashing


@pytest.mark.parametrize("size", [3 * MB, 40 * MB], ids=["one read", "several reads"])
def test_a_new_file_is_read_and_hashed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    workspace = tmp_path / "ws"
    (workspace / "ckpt").mkdir(parents=True)
    (workspace / "ckpt" / "model.pt").write_bytes(os.urandom(size))
    hashed = count_hashed_bytes(monkeypatch)
    store = SnapshotStore(tmp_path / "store")
    snap = store.snapshot(workspace)
    assert hashed == [size], "one hash, fed each byte of the copy once"
    assert snap.files == 1 and store.manifest(snap.id)["files"]["ckpt/model.pt"]["blake3"] == \
        blake3.blake3((workspace / "ckpt" / "model.pt").read_bytes()).hexdigest()
    assert store.read_file(snap.id, "ckpt/model.pt") == (workspace / "ckpt" / "model.pt").read_bytes()


def test_new_read_only_data_is_linked_and_hashed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = old_file(tmp_path / "cache" / "train.csv", DATA, b"d")
    workspace = workspace_with_data(tmp_path / "run", cached)
    hashed = count_hashed_bytes(monkeypatch)
    store = SnapshotStore(tmp_path / "store")
    store.snapshot(workspace, link_paths=["train.csv"])
    assert sorted(hashed) == sorted([DATA, len("print('starter')\n")])
    blob = store.root / "blobs"
    assert any(p.stat().st_ino == cached.stat().st_ino for p in blob.rglob("*") if p.is_file()), "linked"


def test_read_only_data_digests_are_shared_by_later_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           empty_data_cache: OrderedDict) -> None:
    cached = old_file(tmp_path / "cache" / "train.csv", DATA, b"d")
    hashed = count_hashed_bytes(monkeypatch)
    ids = []
    digests = tmp_path / "cache" / "data-digests.json"
    for run in range(3):  # three runs in one worker process, each with its own store, as the runner does them
        with SnapshotStore(tmp_path / f"store{run}", data_digests=digests) as store:
            data_digests.vouch([cached], digests)
            workspace = workspace_with_data(tmp_path / f"run{run}", cached)
            ids.append(store.snapshot(workspace, link_paths=["train.csv"]).id)
            assert store.snapshot(workspace, link_paths=["train.csv"]).id == ids[-1]
        assert store.read_file(ids[-1], "train.csv") == cached.read_bytes()
    assert hashed.count(DATA) == 1, "the data was hashed by the first run only"
    assert len(set(ids)) == 1

    then = time.time() - 60  # the data changed (mtime set back): hashed again, not trusted
    cached.write_bytes(b"e" * DATA)
    os.utime(cached, (then, then))
    workspace = workspace_with_data(tmp_path / "run-changed", cached)
    store = SnapshotStore(tmp_path / "store-changed", data_digests=digests)
    snap = store.snapshot(workspace, link_paths=["train.csv"])
    assert hashed.count(DATA) == 2
    assert store.read_file(snap.id, "train.csv") == b"e" * DATA


def test_the_read_only_digest_cache_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               empty_data_cache: OrderedDict) -> None:
    monkeypatch.setattr(data_digests, "HELD_LEASES", 2)
    workspace = tmp_path / "ws"
    names = [f"part{index}.csv" for index in range(5)]
    for name in names:
        old_file(workspace / name, 100, name.encode())
    SnapshotStore(tmp_path / "store").snapshot(workspace, link_paths=names)
    assert len(empty_data_cache) == 2


def test_a_task_with_hundreds_of_data_files_is_hashed_once_per_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, empty_data_cache: OrderedDict) -> None:
    # identify-contrails' mini data has 463 files; a room of 256 leases made every snapshot evict
    # the leases it needed next and hash the whole dataset again
    hashed = count_hashed_bytes(monkeypatch)
    cache = tmp_path / "cache"
    names = [f"part{index}.npy" for index in range(600)]
    for name in names:
        old_file(cache / name, 10, name.encode())
    for run in ("run-1", "run-2"):
        workspace = tmp_path / run
        workspace.mkdir()
        for name in names:
            os.link(cache / name, workspace / name)
        SnapshotStore(tmp_path / run / "store").snapshot(workspace, link_paths=names)
    assert len(hashed) == len(names)  # the second run's snapshot trusted the first's leases
    assert data_digests.lease_room() >= len(names)


def test_unchanged_files_are_not_even_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = tmp_path / "ws"
    for index in range(20):
        old_file(workspace / f"m{index}.py", 10, b"x")
    store = SnapshotStore(tmp_path / "store")
    store.snapshot(workspace)
    opened: list[str] = []
    real_open = scan_module.open_regular

    def counting_open(rel, name, dir_fd):  # type: ignore[no-untyped-def]
        opened.append(rel)
        return real_open(rel, name, dir_fd)

    monkeypatch.setattr(scan_module, "open_regular", counting_open)
    write(workspace / "m3.py", "changed\n")
    store.snapshot(workspace)
    assert opened == ["m3.py"]


# ---------------------------------------------------------------------- durability


def test_one_sync_per_snapshot_and_no_fsync_per_file(tmp_path: Path, syncs: list[str]) -> None:
    workspace = tmp_path / "ws"
    for index in range(200):
        write(workspace / f"f{index:03}.txt", f"{index}\n")
    store = SnapshotStore(tmp_path / "store")
    store.snapshot(workspace)
    store.wait_durable()
    assert syncs == ["syncfs"]
    store.snapshot(workspace)
    store.wait_durable()
    assert syncs == ["syncfs"], "nothing new, nothing to sync"
    write(workspace / "f000.txt", "edited\n")
    store.snapshot(workspace)
    store.wait_durable()
    assert syncs == ["syncfs", "syncfs"]


def test_a_reopened_store_syncs_once_before_trusting_a_manifest_it_did_not_write(
    tmp_path: Path, syncs: list[str]
) -> None:
    workspace = tmp_path / "ws"
    write(workspace / "a.txt", "a\n")
    with SnapshotStore(tmp_path / "store") as first:
        first.snapshot(workspace)
    with SnapshotStore(tmp_path / "store") as reopened:
        reopened.snapshot(workspace)
        reopened.snapshot(workspace)
    assert syncs == ["syncfs", "syncfs"]


def test_readers_and_scratch_stores_never_sync(tmp_path: Path, syncs: list[str]) -> None:
    workspace = tmp_path / "ws"
    write(workspace / "a.txt", "a\n")
    SnapshotStore(tmp_path / "store", fsync=False).snapshot(workspace)
    assert syncs == []


def test_a_blob_cut_short_is_rewritten_not_reused(tmp_path: Path) -> None:
    """After a power cut before the sync, a renamed blob may be empty: its size gives it away."""
    workspace = tmp_path / "ws"
    content = b"weights " * 1000
    workspace.mkdir()
    (workspace / "model.bin").write_bytes(content)
    snap = SnapshotStore(tmp_path / "store").snapshot(workspace)
    blob = next(p for p in (tmp_path / "store" / "blobs").rglob("*") if p.is_file())
    blob.chmod(0o644)
    blob.write_bytes(b"")
    again = SnapshotStore(tmp_path / "store").snapshot(workspace)
    assert again.id == snap.id
    assert SnapshotStore(tmp_path / "store").read_file(snap.id, "model.bin") == content


# ---------------------------------------------------------------------- the racy window


def test_a_file_written_just_before_a_snapshot_is_not_hashed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = tmp_path / "ws"
    write(workspace / "checkpoint.pt", "w" * 1000)
    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(digest_cache.time, "sleep", lambda s: (slept.append(s), real_sleep(s)))
    hashed = count_hashed_bytes(monkeypatch)
    store = SnapshotStore(tmp_path / "store")
    store.snapshot(workspace)
    for _ in range(3):
        store.snapshot(workspace)
    assert hashed == [1000]
    assert len(slept) <= 1 and all(s <= digest_cache.RACY_WINDOW_NS / 1e9 for s in slept), \
        "at most one wait, of at most one window"


def test_a_same_size_edit_in_the_same_tick_is_still_seen(tmp_path: Path) -> None:
    """The window's point: a cached digest must never hide a rewrite, even one that keeps the
    size and puts the mtime back."""
    workspace = tmp_path / "ws"
    path = write(workspace / "train.py", "lr = 0.1\n")
    store = SnapshotStore(tmp_path / "store")
    first = store.snapshot(workspace)
    for lr in ("0.2", "0.3", "0.4"):
        before = path.stat()
        with open(path, "r+") as fh:
            fh.write(f"lr = {lr}\n")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        snap = store.snapshot(workspace)
        assert store.read_file(snap.id, "train.py") == f"lr = {lr}\n".encode()
    assert snap.id != first.id


class FakeClock:
    """time.time_ns and time.sleep for the store, under the test's control."""

    def __init__(self, now_ns: int) -> None:
        self.now_ns = now_ns
        self.slept: list[float] = []

    def time_ns(self) -> int:
        return self.now_ns

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now_ns += int(seconds * 1e9) + 1


def test_the_racy_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    window = digest_cache.RACY_WINDOW_NS
    assert window < 100_000_000, "a clock tick, not a second"
    clock = FakeClock(1_700_000_000_123_456_789)
    monkeypatch.setattr(digest_cache, "time", clock)
    started = clock.now_ns
    racy = digest_cache.RacyWindow(started_ns=started)
    assert racy.cacheable(started - 10 * window)  # long settled
    assert not racy.cacheable(started + 1)  # changed after the snapshot began
    assert not racy.cacheable(1_700_000_000_000_000_000)  # whole-second stamps: a 2 s window, no wait
    assert clock.slept == []
    assert racy.cacheable(started - window // 2)  # changed just before: wait out the window once
    assert len(clock.slept) == 1 and 0 < clock.slept[0] <= window / 1e9
    assert racy.cacheable(started - window // 3)
    assert len(clock.slept) == 1, "one wait covers every file changed before the snapshot began"

"""Read-only data's digests remembered across processes (data_digests.py): a second process does
not hash the data again, a corrupt or foreign digests file is never trusted, a changed ctime
means hashing again, and an agent can neither plant an entry nor change the data unnoticed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import blake3
import pytest

from pytest_mlab.trace import SnapshotStore
from pytest_mlab.trace.snapshots import data_digests
from tests.trace.support import count_hashed_bytes

MB = 1 << 20
DATA = 2 * MB
REPO = Path(__file__).resolve().parents[2]

# One run in a fresh process, as an xdist worker carries it out: link the data into a workspace,
# snapshot twice, settle; prints the bytes of data it hashed and the data's recorded digest.
ONE_RUN = '''
import blake3, json, os, sys
from pathlib import Path
from pytest_mlab.trace import SnapshotStore
from pytest_mlab.trace.snapshots import data_digests
from pytest_mlab.trace.snapshots import blobs
fed = []
class Counting:
    def __init__(self):
        self._h = blake3.blake3(); fed.append(0); self._i = len(fed) - 1
    def update(self, data):
        fed[self._i] += len(data); self._h.update(data)
    def hexdigest(self):
        return self._h.hexdigest()
blobs._new_hasher = Counting
cached, root = Path(sys.argv[1]), Path(sys.argv[2])
workspace = root / "ws"
workspace.mkdir(parents=True)
with SnapshotStore(root / "store", data_digests=cached.parent / "data-digests.json") as store:
    data_digests.vouch([cached], store.data_digests)
    os.link(cached, workspace / "train.csv")
    first = store.snapshot(workspace, link_paths=["train.csv"]).id
    store.snapshot(workspace, link_paths=["train.csv"])
    os.unlink(workspace / "train.csv")  # the workspace goes before the store settles, as in the runner
print(json.dumps({"hashed": sum(fed), "digest": store.file_entry(first, "train.csv")["blake3"]}))
'''


@pytest.fixture(autouse=True)
def no_leases(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(data_digests, "_held", type(data_digests._held)())
    yield
    data_digests.settle(None)


def prepared(folder: Path, fill: bytes = b"d") -> Path:
    """A data file as the data cache holds it: written an hour ago, read-only."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "train.csv"
    path.write_bytes(fill * DATA)
    then = time.time() - 3600
    os.utime(path, (then, then))
    path.chmod(0o444)
    return path


def run_in_new_process(cached: Path, root: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", ONE_RUN, str(cached), str(root)], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_a_second_process_does_not_hash_the_data_again(tmp_path: Path) -> None:
    cached = prepared(tmp_path / "cache")
    truth = blake3.blake3(cached.read_bytes()).hexdigest()
    first = run_in_new_process(cached, tmp_path / "run1")
    second = run_in_new_process(cached, tmp_path / "run2")
    assert first == {"hashed": DATA, "digest": truth}
    assert second == {"hashed": 0, "digest": truth}, "the second process trusted the recorded digest"


@pytest.mark.parametrize("content", [b"{not json", b'{"format": "something else", "entries": []}', None])
def test_a_corrupt_or_foreign_digests_file_is_ignored(tmp_path: Path, content: bytes | None) -> None:
    cached = prepared(tmp_path / "cache")
    run_in_new_process(cached, tmp_path / "run1")
    digests = cached.parent / "data-digests.json"
    if content is None:  # a valid file that others could have written: not trusted
        digests.chmod(0o666)
    else:
        digests.write_bytes(content)
    assert run_in_new_process(cached, tmp_path / "run2")["hashed"] == DATA


def test_a_planted_entry_with_a_wrong_digest_is_not_trusted_once_the_ctime_moved(tmp_path: Path) -> None:
    """An entry names the ctime it was written for; any change since (chmod, touch, a write with
    size and mtime restored) moves the ctime, and the data is hashed again."""
    cached = prepared(tmp_path / "cache")
    run_in_new_process(cached, tmp_path / "run1")
    before = cached.stat()
    cached.chmod(0o644)
    with open(cached, "r+b") as fh:  # same size, mtime set back: only the ctime tells
        fh.write(b"e" * 10)
    os.utime(cached, ns=(before.st_atime_ns, before.st_mtime_ns))
    cached.chmod(0o444)
    assert (cached.stat().st_size, cached.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    result = run_in_new_process(cached, tmp_path / "run2")
    assert result["hashed"] == DATA
    assert result["digest"] == blake3.blake3(cached.read_bytes()).hexdigest()


def test_a_chmod_or_touch_costs_one_hash_and_nothing_else(tmp_path: Path) -> None:
    cached = prepared(tmp_path / "cache")
    run_in_new_process(cached, tmp_path / "run1")
    cached.chmod(0o644)
    assert run_in_new_process(cached, tmp_path / "run2")["hashed"] == DATA
    os.utime(cached, (time.time() - 60, time.time() - 60))
    assert run_in_new_process(cached, tmp_path / "run3")["hashed"] == DATA
    assert run_in_new_process(cached, tmp_path / "run4")["hashed"] == 0


def linked_workspace(tmp_path: Path, cached: Path) -> tuple[Path, SnapshotStore]:
    """A workspace with ``cached`` linked in as train.csv, as the runner links data, and a store."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.link(cached, workspace / "train.csv")
    return workspace, SnapshotStore(tmp_path / "store")


def test_a_write_while_a_lease_is_held_is_noticed_in_the_same_process(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a process the lease vouches for the digest; opening the file for writing breaks it."""
    cached = prepared(tmp_path / "cache")
    hashed = count_hashed_bytes(monkeypatch)
    workspace, store = linked_workspace(tmp_path, cached)
    store.snapshot(workspace, link_paths=["train.csv"])
    store.snapshot(workspace, link_paths=["train.csv"])
    assert hashed.count(DATA) == 1
    cached.chmod(0o644)
    with pytest.raises(BlockingIOError):  # the kernel breaks the lease; a blocking open would wait
        os.open(cached, os.O_WRONLY | os.O_NONBLOCK)
    snap = store.snapshot(workspace, link_paths=["train.csv"])
    assert hashed.count(DATA) == 2
    assert store.read_file(snap.id, "train.csv") == cached.read_bytes()


def lease_break_time() -> float:
    """How long the kernel lets a lease holder keep a writer waiting before it breaks the lease itself."""
    seconds = float(Path("/proc/sys/fs/lease-break-time").read_text())
    if seconds < 6:
        pytest.skip(f"lease-break-time is {seconds:g}s here: too short to tell a given-back lease from a timed-out one")
    return seconds


WRITER = "import sys, time; t = time.monotonic(); open(sys.argv[1], 'r+b').write(b'w'); print(time.monotonic() - t)"


def test_a_writer_in_another_process_is_not_kept_waiting_and_its_change_is_noticed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent's script that opens a leased data file for writing: the kernel signals this
    process, which gives the lease back at once instead of holding the writer for the
    lease-break time (45 s by default), and the next snapshot hashes the file again."""
    patience = lease_break_time()
    cached = prepared(tmp_path / "cache")
    hashed = count_hashed_bytes(monkeypatch)
    workspace, store = linked_workspace(tmp_path, cached)
    store.snapshot(workspace, link_paths=["train.csv"])
    cached.chmod(0o644)
    writer = subprocess.run([sys.executable, "-c", WRITER, str(cached)], capture_output=True, text=True,
                            timeout=patience + 30)
    assert writer.returncode == 0, writer.stderr
    assert float(writer.stdout) < patience / 3  # given back, not timed out
    snap = store.snapshot(workspace, link_paths=["train.csv"])
    assert hashed.count(DATA) == 2
    assert store.read_file(snap.id, "train.csv")[:1] == b"w"


def test_this_process_opening_a_file_it_leases_for_writing_is_not_kept_waiting(tmp_path: Path) -> None:
    """The open is interrupted by the break's signal, the lease given back, and the open retried."""
    patience = lease_break_time()
    cached = prepared(tmp_path / "cache")
    workspace, store = linked_workspace(tmp_path, cached)
    store.snapshot(workspace, link_paths=["train.csv"])
    cached.chmod(0o644)
    started = time.monotonic()
    with open(cached, "r+b") as fh:
        fh.write(b"w")
    assert time.monotonic() - started < patience / 3


def test_without_leases_a_store_still_hashes_its_data_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another owner's file, or a file system without leases: the store's own stat cache, keyed
    with the ctime its link left, keeps later snapshots from hashing the data again."""
    monkeypatch.setattr(data_digests, "take_lease", lambda fd: None)
    cached = prepared(tmp_path / "cache")
    hashed = count_hashed_bytes(monkeypatch)
    workspace, store = linked_workspace(tmp_path, cached)
    for _ in range(3):
        store.snapshot(workspace, link_paths=["train.csv"])
    assert hashed.count(DATA) == 1
    cached.chmod(0o644)  # the ctime moved: hashed again
    store.snapshot(workspace, link_paths=["train.csv"])
    assert hashed.count(DATA) == 2


def test_the_digests_file_is_parsed_once_for_many_lookups_and_again_when_replaced(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """A snapshot looks up every data file: parsing the whole file for each lookup cost seconds on a
    task with a thousand data files. It is parsed again only once it was replaced."""
    digests = tmp_path / "digests.json"
    entry = [1, 2, 3, 4, 5, "a" * 64]
    digests.write_text(json.dumps({"format": data_digests.FORMAT, "entries": [entry]}))
    parsed = []
    real_loads = json.loads
    monkeypatch.setattr(data_digests.json, "loads", lambda text: parsed.append(1) or real_loads(text))
    for _ in range(50):
        assert data_digests._load(digests) == {(1, 2): ((3, 4, 5), "a" * 64)}
    assert len(parsed) == 1
    replacement = tmp_path / "new.json"
    replacement.write_text(json.dumps({"format": data_digests.FORMAT, "entries": [[1, 2, 3, 4, 6, "b" * 64]]}))
    os.replace(replacement, digests)
    assert data_digests._load(digests) == {(1, 2): ((3, 4, 6), "b" * 64)} and len(parsed) == 2

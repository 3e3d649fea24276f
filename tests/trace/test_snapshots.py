"""SnapshotStore: per-step workspace snapshots that cost only what changed."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import threading
import time
from pathlib import Path

import blake3
import pytest

from pytest_mlab.errors import TraceError
from pytest_mlab.trace import Snapshot, SnapshotCaps, SnapshotStore
from pytest_mlab.trace.snapshots import blobs
from pytest_mlab.trace.snapshots import scan as scan_module
from tests.trace.support import blob_files as _blob_files
from tests.trace.support import count_hashed_bytes as _count_hashed_bytes
from tests.trace.support import write as _write

BIG = 100 * 1024 * 1024
KB = 1024
MB = 1024 * 1024


def _make_big_file(path: Path, *, age_s: float = 0.0) -> None:
    """A 100 MB file of real (not sparse) content; ``age_s`` backdates it like prepared data."""
    with open(path, "wb") as fh:
        fh.write(b"big read-only training data\n")
        block = b"\x01" * MB
        while fh.tell() + MB <= BIG:
            fh.write(block)
        fh.write(block[: BIG - fh.tell()])
    if age_s:
        then = time.time() - age_s
        os.utime(path, (then, then))


# ---------------------------------------------------------------------- cost per step


def test_fifty_steps_with_a_linked_100mb_file_add_almost_nothing(
    workspace: Path, store: SnapshotStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _make_big_file(workspace / "data.bin", age_s=3600)
    hashed = _count_hashed_bytes(monkeypatch)
    started = time.monotonic()
    snaps: list[Snapshot] = []
    for step in range(50):
        _write(workspace / "train.py", f"print('step {step}')\n")
        snaps.append(store.snapshot(workspace, link_paths=["data.bin"]))
    elapsed = time.monotonic() - started

    assert snaps[0].bytes == BIG + len("print('step 0')\n")
    assert all(s.files == 2 for s in snaps)
    assert len({s.id for s in snaps}) == 50, "every step edited train.py"
    for snap in snaps[1:]:
        assert snap.new_bytes < 4 * KB, snap
    assert store.stored_bytes() < BIG + 1 * MB
    assert sum(s.new_bytes for s in snaps) == store.stored_bytes()
    assert sum(hashed) < 2 * BIG, "the hash cache must stop the big file being re-read"
    assert elapsed < 20

    big_blob = [p for p in _blob_files(store.root) if p.stat().st_size == BIG]
    assert len(big_blob) == 1
    assert big_blob[0].stat().st_ino == (workspace / "data.bin").stat().st_ino, "hard-linked"


def test_link_paths_may_name_a_directory(workspace: Path, store: SnapshotStore) -> None:
    _write(workspace / "data" / "train.csv", "a,b\n1,2\n")
    _write(workspace / "notes.txt", "mine\n")
    store.snapshot(workspace, link_paths=["./data/"])
    inodes = {p.stat().st_ino for p in _blob_files(store.root)}
    assert (workspace / "data" / "train.csv").stat().st_ino in inodes
    assert (workspace / "notes.txt").stat().st_ino not in inodes


def test_link_paths_must_not_be_a_bare_string(workspace: Path, store: SnapshotStore) -> None:
    with pytest.raises(TypeError):
        store.snapshot(workspace, link_paths="data.bin")


def test_without_link_paths_the_big_file_is_stored_exactly_once(
    workspace: Path, store: SnapshotStore
) -> None:
    _make_big_file(workspace / "data.bin", age_s=3600)
    snaps = []
    for step in range(5):
        _write(workspace / "train.py", f"print({step})\n")
        snaps.append(store.snapshot(workspace))
    big_blobs = [p for p in _blob_files(store.root) if p.stat().st_size == BIG]
    assert len(big_blobs) == 1
    assert big_blobs[0].stat().st_ino != (workspace / "data.bin").stat().st_ino, "a copy"
    assert snaps[0].new_bytes >= BIG
    assert all(s.new_bytes < 4 * KB for s in snaps[1:])
    assert BIG < store.stored_bytes() < BIG + 1 * MB


def test_a_new_store_instance_reuses_blobs_already_on_disk(workspace: Path, tmp_path: Path) -> None:
    _write(workspace / "a.txt", "hello\n")
    first = SnapshotStore(tmp_path / "store").snapshot(workspace)
    again = SnapshotStore(tmp_path / "store").snapshot(workspace)
    assert again.id == first.id
    assert again.new_bytes == 0


def test_unchanged_files_are_not_rehashed(
    workspace: Path, store: SnapshotStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = time.time() - 3600
    for name in ("a.txt", "b.txt"):
        _write(workspace / name, name)
        os.utime(workspace / name, (old, old))
    hashed = _count_hashed_bytes(monkeypatch)
    store.snapshot(workspace)
    assert len(hashed) == 2
    store.snapshot(workspace)
    assert len(hashed) == 2
    _write(workspace / "b.txt", "changed")
    store.snapshot(workspace)
    assert len(hashed) == 3


def test_same_size_edit_with_the_same_recent_mtime_is_still_seen(
    workspace: Path, store: SnapshotStore
) -> None:
    """The racy-clean rule: a stat match is not trusted for a file modified just now."""
    path = _write(workspace / "train.py", "lr = 0.1\n")
    first = store.snapshot(workspace)
    before = path.stat()
    with open(path, "r+") as fh:  # edit in place: same inode, same size
        fh.write("lr = 0.9\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    second = store.snapshot(workspace)
    assert second.id != first.id
    assert store.diff(first.id, second.id)["changed"] == ["train.py"]


# ---------------------------------------------------------------------- identity


def test_identical_consecutive_snapshots_share_one_id_and_manifest(
    workspace: Path, store: SnapshotStore
) -> None:
    _write(workspace / "train.py", "print(1)\n")
    (workspace / "empty").mkdir()
    first = store.snapshot(workspace)
    second = store.snapshot(workspace)
    assert second.id == first.id
    assert second.new_bytes == 0
    assert len(list((store.root / "manifests").iterdir())) == 1


def test_touching_a_file_without_changing_it_keeps_the_id(
    workspace: Path, store: SnapshotStore
) -> None:
    path = _write(workspace / "train.py", "print(1)\n")
    first = store.snapshot(workspace)
    path.write_text("print(1)\n")
    os.utime(path, (time.time() + 5, time.time() + 5))
    assert store.snapshot(workspace).id == first.id


def test_two_workspaces_with_the_same_content_share_everything(
    tmp_path: Path, store: SnapshotStore
) -> None:
    ids = []
    for name in ("one", "two"):
        _write(tmp_path / name / "src" / "model.py", "class Model: ...\n")
        ids.append(store.snapshot(tmp_path / name))
    assert ids[0].id == ids[1].id
    assert ids[1].new_bytes == 0


def test_a_mode_change_alone_changes_the_snapshot(workspace: Path, store: SnapshotStore) -> None:
    path = _write(workspace / "run.sh", "echo hi\n")
    first = store.snapshot(workspace)
    path.chmod(0o755)
    second = store.snapshot(workspace)
    assert second.id != first.id
    assert store.manifest(second.id)["files"]["run.sh"]["mode"] == 0o755
    assert store.diff(first.id, second.id) == {"added": [], "removed": [], "changed": ["run.sh"]}


# ---------------------------------------------------------------------- manifest contents


def test_manifest_records_files_symlinks_and_empty_dirs(
    workspace: Path, store: SnapshotStore
) -> None:
    _write(workspace / "train.py", "print(1)\n")
    _write(workspace / "bin" / "run.sh", "#!/bin/sh\n", executable=True)
    (workspace / "out" / "ckpt").mkdir(parents=True)
    (workspace / "logs").mkdir()
    _write(workspace / "logs" / "x.log", "x")
    os.symlink("train.py", workspace / "link.py")
    snap = store.snapshot(workspace)
    manifest = store.manifest(snap.id)
    files = manifest["files"]
    assert sorted(files) == ["bin/run.sh", "link.py", "logs/x.log", "train.py"]
    assert files["train.py"]["size"] == len("print(1)\n")
    assert files["train.py"]["mode"] == 0o644
    assert files["bin/run.sh"]["mode"] == 0o755
    assert files["link.py"] == {"symlink": "train.py"}
    assert manifest["dirs"] == ["out/ckpt"]
    assert snap.files == 4
    assert snap.bytes == len("print(1)\n") + len("#!/bin/sh\n") + 1


def test_fifos_are_skipped_without_hanging(workspace: Path, store: SnapshotStore) -> None:
    os.mkfifo(workspace / "pipe")
    _write(workspace / "a.txt", "a")
    snap = store.snapshot(workspace)
    assert sorted(store.manifest(snap.id)["files"]) == ["a.txt"]


def test_store_inside_the_workspace_is_not_snapshotted(workspace: Path) -> None:
    store = SnapshotStore(workspace / ".mlab" / "snapshots")
    _write(workspace / "a.txt", "a")
    first = store.snapshot(workspace)
    second = store.snapshot(workspace)
    assert second.id == first.id
    assert all(".mlab/snapshots" not in p for p in store.manifest(second.id)["files"])


def test_undecodable_file_names_round_trip(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    name = os.fsdecode(b"caf\xe9.txt")
    (workspace / name).write_bytes(b"latin-1 name")
    snap = store.snapshot(workspace)
    store.materialize(snap.id, tmp_path / "out")
    assert os.listdir(os.fsencode(tmp_path / "out")) == [b"caf\xe9.txt"]


# ---------------------------------------------------------------------- materialize


def _build_rich_workspace(ws: Path, outside: Path) -> None:
    _write(ws / "train.py", "import torch\n")
    _write(ws / "scripts" / "run.sh", "#!/bin/sh\necho run\n", executable=True)
    _write(ws / "data" / "train.csv", "x,y\n1,2\n")
    (ws / "empty" / "nested").mkdir(parents=True)
    (ws / "empty_top").mkdir()
    os.symlink("train.py", ws / "relative_link.py")
    os.symlink(str(outside), ws / "absolute_link")
    os.symlink("does/not/exist", ws / "dangling")
    os.symlink("scripts", ws / "dir_link")


def _tree(root: Path) -> dict[str, object]:
    """A comparable description: content and exec bit of files, targets of links, empty dirs."""
    out: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                if not any(path.iterdir()):
                    out[rel] = ("dir",)
            else:
                out[rel] = ("file", path.read_bytes(), bool(path.stat().st_mode & stat.S_IXUSR))
    return out


@pytest.mark.parametrize("link", [True, False])
def test_materialize_round_trips_the_workspace(
    workspace: Path, store: SnapshotStore, tmp_path: Path, link: bool
) -> None:
    secret = _write(tmp_path / "outside" / "secret.txt", "secret")
    _build_rich_workspace(workspace, secret)
    snap = store.snapshot(workspace)
    dest = tmp_path / "restored"
    store.materialize(snap.id, dest, link=link)
    assert _tree(dest) == _tree(workspace)
    assert (dest / "absolute_link").is_symlink()
    assert os.readlink(dest / "absolute_link") == str(secret)
    assert (dest / "dir_link").is_symlink() and (dest / "dir_link" / "run.sh").exists()
    again = store.snapshot(dest)
    if link:  # files hard-linked to the store have links outside the tree: never taken in
        assert again.omitted and {why for _, why in again.omitted} == {"a hard link to a file outside the workspace"}
    else:
        assert again.id == snap.id, "snapshotting the restored tree gives the same id"


def test_materialize_copies_are_independent_of_the_store(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    _write(workspace / "train.py", "original\n")
    snap = store.snapshot(workspace)
    dest = tmp_path / "copy"
    store.materialize(snap.id, dest, link=False)
    (dest / "train.py").write_text("edited\n")
    again = tmp_path / "again"
    store.materialize(snap.id, again, link=False)
    assert (again / "train.py").read_text() == "original\n"
    assert (dest / "train.py").stat().st_mode & 0o777 == 0o644


def test_materialize_with_link_uses_hard_links(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    _write(workspace / "train.py", "x = 1\n")
    _write(workspace / "run.sh", "#!/bin/sh\n", executable=True)
    snap = store.snapshot(workspace)
    store.materialize(snap.id, tmp_path / "out", link=True)
    blob_inodes = {p.stat().st_ino for p in _blob_files(store.root)}
    assert (tmp_path / "out" / "train.py").stat().st_ino in blob_inodes
    run_sh = tmp_path / "out" / "run.sh"
    assert run_sh.stat().st_mode & stat.S_IXUSR, "exec bit kept (copied when the blob lacks it)"
    before = store.stored_bytes()
    store.materialize(snap.id, tmp_path / "out2", link=True)
    assert store.stored_bytes() == before


def test_materialize_refuses_a_non_empty_destination(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    _write(workspace / "a.txt", "a")
    snap = store.snapshot(workspace)
    dest = tmp_path / "busy"
    _write(dest / "keep.txt", "mine")
    with pytest.raises(TraceError, match="not an empty directory"):
        store.materialize(snap.id, dest)
    assert (dest / "keep.txt").read_text() == "mine"


def test_materialize_of_an_empty_workspace_creates_dest(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    snap = store.snapshot(workspace)
    assert (snap.files, snap.bytes) == (0, 0)
    store.materialize(snap.id, tmp_path / "empty_out")
    assert list((tmp_path / "empty_out").iterdir()) == []


# ---------------------------------------------------------------------- secrets behind symlinks


def test_symlinked_secret_never_enters_the_store(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    token = b"sk-SUPER-SECRET-TOKEN-0123456789"
    outside = tmp_path / "home"
    (outside / ".ssh").mkdir(parents=True)
    (outside / "credentials").write_bytes(token)
    (outside / ".ssh" / "id_rsa").write_bytes(token + b" key")
    os.symlink(outside / "credentials", workspace / "creds.txt")
    os.symlink(outside / ".ssh", workspace / "ssh")
    _write(workspace / "train.py", "print('hi')\n")
    snap = store.snapshot(workspace, link_paths=["creds.txt", "ssh"])

    for path in store.root.rglob("*"):
        if path.is_file():
            assert token not in path.read_bytes(), f"secret leaked into {path}"
    files = store.manifest(snap.id)["files"]
    assert files["creds.txt"] == {"symlink": str(outside / "credentials")}
    assert files["ssh"] == {"symlink": str(outside / ".ssh")}
    assert not any(p.startswith("ssh/") for p in files)
    assert snap.bytes == len("print('hi')\n")

    dest = tmp_path / "restored"
    store.materialize(snap.id, dest, link=False)
    assert (dest / "creds.txt").is_symlink()
    assert os.readlink(dest / "creds.txt") == str(outside / "credentials")


def test_a_file_swapped_for_a_symlink_mid_walk_is_not_copied(
    workspace: Path, store: SnapshotStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A race: the agent replaces a listed file by a link to a secret before we open it."""
    secret = _write(tmp_path / "secret.txt", "TOP-SECRET-VALUE")
    victim = _write(workspace / "victim.txt", "harmless")
    real_open = scan_module.open_regular

    def swapping_open(rel, name, dir_fd):  # type: ignore[no-untyped-def]
        if rel == "victim.txt":
            victim.unlink()
            os.symlink(secret, victim)
        return real_open(rel, name, dir_fd)

    monkeypatch.setattr(scan_module, "open_regular", swapping_open)
    store.snapshot(workspace)
    for path in _blob_files(store.root):
        assert b"TOP-SECRET-VALUE" not in path.read_bytes()


# ---------------------------------------------------------------------- crash safety


def test_a_failed_blob_write_leaves_no_partial_blob(
    workspace: Path, store: SnapshotStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(workspace / "model.py", "weights = [1, 2, 3]\n" * 1000)

    def dying_copy(src, out, limit=None):  # type: ignore[no-untyped-def]
        out.write(src.read(100))
        raise KeyboardInterrupt  # Ctrl-C halfway through the copy

    monkeypatch.setattr(blobs, "_copy_hashing", dying_copy)
    with pytest.raises(KeyboardInterrupt):
        store.snapshot(workspace)
    assert list(store.root.rglob("*")) == [p for p in store.root.rglob("*") if p.is_dir()]
    monkeypatch.undo()

    snap = store.snapshot(workspace)
    assert snap.new_bytes >= 20 * 1000
    (blob,) = _blob_files(store.root)
    assert blob.read_bytes() == (workspace / "model.py").read_bytes()


def test_blobs_are_named_by_their_blake3(workspace: Path, store: SnapshotStore) -> None:
    content = b"some content\n"
    (workspace / "f.txt").write_bytes(content)
    snap = store.snapshot(workspace)
    digest = blake3.blake3(content).hexdigest()
    assert store.manifest(snap.id)["files"]["f.txt"] == {"blake3": digest, "size": len(content), "mode": 0o644}
    blob = store.root / "blobs" / digest[:2] / digest
    assert blob.read_bytes() == content
    assert not blob.stat().st_mode & 0o222, "copied blobs are read-only"


def test_concurrent_writers_share_one_store(tmp_path: Path) -> None:
    workspaces = []
    for i in range(4):
        ws = tmp_path / f"ws{i}"
        _write(ws / "shared.bin", "same bytes\n" * 50_000)
        _write(ws / f"own{i}.txt", str(i))
        workspaces.append(ws)
    root = tmp_path / "store"
    results: dict[int, Snapshot] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            store = SnapshotStore(root)
            for _ in range(5):
                results[i] = store.snapshot(workspaces[i])
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store = SnapshotStore(root)
    for i, snap in results.items():
        dest = tmp_path / f"out{i}"
        store.materialize(snap.id, dest)
        assert _tree(dest) == _tree(workspaces[i])
    assert not [p for p in root.rglob(".tmp-*")], "no temp files left behind"
    assert len([p for p in _blob_files(root) if p.stat().st_size == 550_000]) == 1


# ---------------------------------------------------------------------- errors and diff


def test_unknown_snapshot_id_raises_a_clear_error(store: SnapshotStore, tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no snapshot '0123456789abcdef'"):
        store.manifest("0123456789abcdef")
    with pytest.raises(TraceError, match="no snapshot"):
        store.materialize("0123456789abcdef", tmp_path / "out")
    with pytest.raises(TraceError, match="not a snapshot id"):
        store.manifest("../../etc/passwd")


def test_a_store_of_format_1_named_by_sha256_is_still_read(store: SnapshotStore, tmp_path: Path) -> None:
    """Results folders written before BLAKE3 keep their snapshots readable: report, diff, regrade."""
    content = b"print('old run')\n"
    digest = hashlib.sha256(content).hexdigest()
    blob = store.root / "blobs" / digest[:2] / digest
    blob.parent.mkdir(parents=True)
    blob.write_bytes(content)
    manifest = {"format": 1, "files": {"train.py": {"sha256": digest, "size": len(content), "mode": 0o644}},
                "dirs": []}
    (store.root / "manifests" / "00112233aabbccdd.json").write_text(json.dumps(manifest))
    assert store.read_file("00112233aabbccdd", "train.py") == content
    store.materialize_regular("00112233aabbccdd", tmp_path / "out")
    assert (tmp_path / "out" / "train.py").read_bytes() == content


@pytest.mark.parametrize("entry", [
    {"size": 1, "mode": 0o644},
    {"blake3": "ab" * 32, "sha256": "ab" * 32, "size": 1, "mode": 0o644},
    {"blake3": "../../etc/passwd", "size": 1, "mode": 0o644},
    {"sha256": "AB" * 32, "size": 1, "mode": 0o644},
], ids=["no digest", "two digests", "a path for a digest", "upper-case digest"])
def test_a_manifest_entry_needs_exactly_one_well_formed_digest(store: SnapshotStore, entry: dict) -> None:
    manifest = {"format": 2, "files": {"a.txt": entry}, "dirs": []}
    (store.root / "manifests" / "00112233aabbccdd.json").write_text(json.dumps(manifest))
    with pytest.raises(TraceError, match="'a.txt' has no valid blake3 digest"):
        store.manifest("00112233aabbccdd")


@pytest.mark.parametrize("size", [10 * KB, 12 * MB], ids=["small", "several chunks"])
def test_where_the_kernel_cannot_copy_the_store_copies_through_the_process(
    workspace: Path, store: SnapshotStore, monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    """copy_file_range fails across some file systems and on old kernels: the copy goes on."""
    content = os.urandom(size)
    (workspace / "model.pt").write_bytes(content)

    def no_kernel_copy(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(blobs.os, "copy_file_range", no_kernel_copy)
    snap = store.snapshot(workspace)
    assert store.manifest(snap.id)["files"]["model.pt"]["blake3"] == blake3.blake3(content).hexdigest()
    assert store.read_file(snap.id, "model.pt") == content
    capped = store.snapshot(workspace, caps=SnapshotCaps(file_size=size // 2))
    assert [path for path, _ in capped.omitted] == ["model.pt"]


def test_missing_blob_is_reported_as_corruption(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    _write(workspace / "a.txt", "a")
    snap = store.snapshot(workspace)
    for blob in _blob_files(store.root):
        blob.unlink()
    with pytest.raises(TraceError, match="a.txt.*missing"):
        store.materialize(snap.id, tmp_path / "out")


def test_tampered_manifest_cannot_write_outside_dest(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    _write(workspace / "a.txt", "a")
    snap = store.snapshot(workspace)
    path = store.root / "manifests" / f"{snap.id}.json"
    path.write_text(path.read_text().replace('"a.txt"', '"../escaped.txt"'))
    with pytest.raises(TraceError, match="unsafe path"):
        store.materialize(snap.id, tmp_path / "out")
    assert not (tmp_path / "escaped.txt").exists()


def test_snapshot_of_a_missing_workspace_raises(store: SnapshotStore, tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="not a directory"):
        store.snapshot(tmp_path / "nope")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file_raises_trace_error(workspace: Path, store: SnapshotStore) -> None:
    path = _write(workspace / "locked.txt", "x")
    path.chmod(0)
    try:
        with pytest.raises(TraceError, match="locked.txt"):
            store.snapshot(workspace)
    finally:
        path.chmod(0o644)


def test_diff_lists_added_removed_and_changed(workspace: Path, store: SnapshotStore) -> None:
    _write(workspace / "keep.py", "same\n")
    _write(workspace / "edit.py", "v1\n")
    _write(workspace / "gone.py", "bye\n")
    os.symlink("keep.py", workspace / "link")
    old = store.snapshot(workspace)
    _write(workspace / "edit.py", "v2\n")
    (workspace / "gone.py").unlink()
    _write(workspace / "sub" / "new.py", "hi\n")
    (workspace / "link").unlink()
    os.symlink("edit.py", workspace / "link")
    new = store.snapshot(workspace)
    assert store.diff(old.id, new.id) == {
        "added": ["sub/new.py"],
        "removed": ["gone.py"],
        "changed": ["edit.py", "link"],
    }
    assert store.diff(new.id, new.id) == {"added": [], "removed": [], "changed": []}


def test_stored_bytes_counts_blobs_and_manifests(workspace: Path, store: SnapshotStore) -> None:
    assert store.stored_bytes() == 0
    _write(workspace / "a.txt", "a" * 1000)
    snap = store.snapshot(workspace)
    manifest_size = (store.root / "manifests" / f"{snap.id}.json").stat().st_size
    assert store.stored_bytes() == 1000 + manifest_size == snap.new_bytes


def test_stored_bytes_counts_a_shared_inode_once(workspace: Path, store: SnapshotStore) -> None:
    """Editing a linked file in place (which link_paths forbids) makes two blobs one inode."""
    path = _write(workspace / "data.csv", "a" * 5000)
    first = store.snapshot(workspace, link_paths=["data.csv"])
    with open(path, "r+") as fh:
        fh.write("b" * 5000)
    second = store.snapshot(workspace, link_paths=["data.csv"])
    blobs = _blob_files(store.root)
    assert len(blobs) == 2 and len({p.stat().st_ino for p in blobs}) == 1
    manifests = sum(p.stat().st_size for p in (store.root / "manifests").iterdir())
    assert store.stored_bytes() == 5000 + manifests
    assert first.id != second.id


# ---------------------------------------------------------------------- delta manifests


def _many_files(workspace: Path, count: int) -> None:
    workspace.mkdir(exist_ok=True)
    for index in range(count):
        (workspace / f"f{index:04d}.py").write_text(f"x = {index}\n")


def test_a_step_that_changes_one_file_of_many_stores_a_small_manifest(tmp_path: Path) -> None:
    from pytest_mlab.trace.snapshots.manifests import MAX_CHAIN

    workspace = tmp_path / "ws"
    _many_files(workspace, 2000)
    store = SnapshotStore(tmp_path / "store", fsync=False)
    first = store.snapshot(workspace)
    assert first.new_bytes > 2000 * 50  # the first manifest lists every file
    for step in range(MAX_CHAIN):
        (workspace / "f0001.py").write_text(f"x = {step}  # edited\n")
        snap = store.snapshot(workspace)
        assert snap.new_bytes < 1500, f"step {step} stored {snap.new_bytes} bytes"
        assert snap.files == 2000


def test_delta_manifests_read_back_exactly_as_whole_ones(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _many_files(workspace, 30)
    deltas = SnapshotStore(tmp_path / "deltas", fsync=False)
    ids = []
    for step in range(80):  # crosses two whole-manifest boundaries
        if step % 3 == 0:
            (workspace / f"new{step}.txt").write_text(str(step))
        if step % 5 == 0 and (workspace / f"f{step % 30:04d}.py").exists():
            (workspace / f"f{step % 30:04d}.py").unlink()
        if step % 7 == 0:
            (workspace / f"dir{step}").mkdir()
        (workspace / "changing.py").write_text(f"step = {step}\n")
        ids.append((deltas.snapshot(workspace).id, SnapshotStore(tmp_path / f"whole{step}", fsync=False)))
        whole_store = ids[-1][1]
        assert whole_store.snapshot(workspace).id == ids[-1][0]  # same state, same id
    reader = SnapshotStore(tmp_path / "deltas", fsync=False)  # a fresh instance: no cached state
    for snapshot_id, whole_store in ids:
        assert reader.manifest(snapshot_id) == whole_store.manifest(snapshot_id)
    reader.materialize(ids[40][0], tmp_path / "restored")
    assert (tmp_path / "restored" / "changing.py").read_text() == "step = 40\n"


def test_the_delta_chain_is_bounded(tmp_path: Path) -> None:
    from pytest_mlab.trace.snapshots.manifests import MAX_CHAIN

    workspace = tmp_path / "ws"
    _many_files(workspace, 3)
    store = SnapshotStore(tmp_path / "store", fsync=False)
    whole = 0
    for step in range(2 * MAX_CHAIN + 3):
        (workspace / "a.py").write_text(str(step))
        snapshot_id = store.snapshot(workspace).id
        stored = json.loads((tmp_path / "store" / "manifests" / f"{snapshot_id}.json").read_text())
        whole += "base" not in stored
    assert whole == 3


def test_a_delta_whose_base_is_missing_is_reported(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _many_files(workspace, 3)
    store = SnapshotStore(tmp_path / "store", fsync=False)
    first = store.snapshot(workspace).id
    (workspace / "a.py").write_text("changed")
    second = store.snapshot(workspace).id
    (tmp_path / "store" / "manifests" / f"{first}.json").unlink()
    with pytest.raises(TraceError, match=f"no snapshot '{first}'"):
        SnapshotStore(tmp_path / "store").manifest(second)


def test_a_folder_replaced_by_a_file_reads_back_from_a_delta(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    _write(workspace / "out" / "a.txt", "a")
    _write(workspace / "keep.txt", "k")
    store = SnapshotStore(tmp_path / "store", fsync=False)
    first = store.snapshot(workspace).id
    (workspace / "out" / "a.txt").unlink()
    (workspace / "out").rmdir()
    _write(workspace / "out", "now a file")
    second = store.snapshot(workspace).id
    reader = SnapshotStore(tmp_path / "store", fsync=False)
    assert set(reader.manifest(first)["files"]) == {"out/a.txt", "keep.txt"}
    assert set(reader.manifest(second)["files"]) == {"out", "keep.txt"}
    reader.materialize(second, tmp_path / "restored")
    assert (tmp_path / "restored" / "out").read_text() == "now a file"


def test_a_tampered_delta_cannot_put_a_file_below_a_link(tmp_path: Path) -> None:
    """A delta is checked against its (checked) base: an entry below a symlink of the base
    would be written through that link."""
    workspace = tmp_path / "ws"
    _write(workspace / "a.txt", "a")
    os.symlink(tmp_path / "outside", workspace / "link")
    store = SnapshotStore(tmp_path / "store", fsync=False)
    base = store.snapshot(workspace).id
    _write(workspace / "b.txt", "b")
    delta_id = store.snapshot(workspace).id
    path = store.root / "manifests" / f"{delta_id}.json"
    stored = json.loads(path.read_text())
    assert stored["base"] == base
    stored["set"]["link/escaped.txt"] = stored["set"].pop("b.txt")
    path.write_text(json.dumps(stored))
    reader = SnapshotStore(tmp_path / "store", fsync=False)
    reader.manifest(base)  # the base is read (and cached) first, as a report reads steps in order
    with pytest.raises(TraceError, match="lies below the file or link 'link'"):
        reader.materialize(delta_id, tmp_path / "restored")
    assert not (tmp_path / "outside").exists()

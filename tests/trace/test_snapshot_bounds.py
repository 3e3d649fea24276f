"""What a snapshot keeps: caps on size and count, no sparse or hard-linked outside content, and
links recorded but never followed. Everything left out is reported with its reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_mlab.trace import SnapshotCaps, SnapshotStore
from pytest_mlab.trace.snapshots import blobs
from tests.trace.support import blob_files, write

KB = 1024
MB = 1024 * 1024
OUTSIDE_LINK = "a hard link to a file outside the workspace"


def write_bytes(path: Path, size: int, fill: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(fill * size)
    return path


def stored_contents(store: SnapshotStore) -> list[bytes]:
    return [blob.read_bytes() for blob in blob_files(store.root)]


# ---------------------------------------------------------------------- caps


def test_a_file_over_the_size_cap_is_left_out_and_not_stored(workspace: Path, store: SnapshotStore) -> None:
    write_bytes(workspace / "big.bin", 2 * MB, b"B")
    write(workspace / "train.py", "print(1)\n")
    snap = store.snapshot(workspace, caps=SnapshotCaps(file_size=1 * MB))
    assert snap.omitted == (("big.bin", "2 MiB, over the 1 MiB file size limit"),)
    assert set(store.manifest(snap.id)["files"]) == {"train.py"}
    assert not any(b"B" * 100 in content for content in stored_contents(store))


def test_the_file_cap_keeps_the_first_files_in_walk_order(workspace: Path, store: SnapshotStore) -> None:
    for name in ("a.txt", "b.txt", "sub/c.txt", "sub/d.txt"):
        write(workspace / name, name)
    os.symlink("a.txt", workspace / "link")
    write(workspace / "data" / "train.csv", "x,y\n")  # read-only data: never counted
    snap = store.snapshot(workspace, link_paths=["data"], caps=SnapshotCaps(files=3))
    kept = set(store.manifest(snap.id)["files"])
    assert kept == {"a.txt", "b.txt", "link", "data/train.csv"}  # a folder's files come before its subfolders
    assert snap.omitted == (("sub/c.txt", "over the limit of 3 files in one snapshot"),
                            ("sub/d.txt", "over the limit of 3 files in one snapshot"))


def test_the_run_byte_cap_counts_only_new_bytes_over_the_stores_life(workspace: Path, store: SnapshotStore) -> None:
    caps = SnapshotCaps(run_bytes=100 * KB)
    write_bytes(workspace / "data.bin", 1 * MB, b"D")  # read-only data does not count
    write_bytes(workspace / "first.bin", 60 * KB, b"1")
    first = store.snapshot(workspace, link_paths=["data.bin"], caps=caps)
    assert first.omitted == ()

    write_bytes(workspace / "second.bin", 60 * KB, b"2")
    write(workspace / "notes.txt", "small enough\n")
    second = store.snapshot(workspace, link_paths=["data.bin"], caps=caps)
    assert [path for path, _ in second.omitted] == ["second.bin"]
    assert "more than is left of the run's 100 KiB snapshot limit" in second.omitted[0][1]
    assert set(store.manifest(second.id)["files"]) == {"data.bin", "first.bin", "notes.txt"}, \
        "content already stored costs nothing and stays"
    assert not any(content.startswith(b"2222") for content in stored_contents(store))


@pytest.mark.parametrize("start", [10 * KB, 9 * 1024 * KB], ids=["small", "hashed in a second thread"])
def test_a_file_growing_past_the_cap_while_it_is_copied_is_left_out(
    workspace: Path, store: SnapshotStore, monkeypatch: pytest.MonkeyPatch, start: int
) -> None:
    path = write_bytes(workspace / "log.txt", start, b"L")
    real_copy = blobs._copy_hashing

    def growing_copy(src, out, limit=None):  # type: ignore[no-untyped-def]
        with open(path, "ab") as fh:  # the agent's survivor appends while we read
            fh.write(b"L" * (2 * 1024 * KB))
        return real_copy(src, out, limit)

    monkeypatch.setattr(blobs, "_copy_hashing", growing_copy)
    cap = start + 1024 * KB
    snap = store.snapshot(workspace, caps=SnapshotCaps(file_size=cap))
    assert [path for path, _ in snap.omitted] == ["log.txt"]
    assert f"over the {cap // KB} KiB file size limit" in snap.omitted[0][1] or \
        f"over the {cap // (1024 * KB)} MiB file size limit" in snap.omitted[0][1], snap.omitted
    assert store.manifest(snap.id)["files"] == {}
    assert blob_files(store.root) == [], "no partial blob is left behind"


# ---------------------------------------------------------------------- sparse files


def test_a_sparse_file_is_refused_not_inflated(workspace: Path, store: SnapshotStore) -> None:
    with open(workspace / "huge.bin", "wb") as fh:
        fh.truncate(2 << 30)  # 2 GiB of holes
    snap = store.snapshot(workspace)
    (path, reason), = snap.omitted
    assert path == "huge.bin" and reason.startswith("a sparse file: 2 GiB long but")
    assert store.stored_bytes() < 64 * KB


def test_small_files_with_holes_and_sparse_read_only_data_are_kept(workspace: Path, store: SnapshotStore) -> None:
    with open(workspace / "small.bin", "wb") as fh:
        fh.truncate(100 * KB)
    with open(workspace / "data.bin", "wb") as fh:  # the harness's data is not judged
        fh.truncate(8 * MB)
    snap = store.snapshot(workspace, link_paths=["data.bin"])
    assert snap.omitted == ()
    assert set(store.manifest(snap.id)["files"]) == {"small.bin", "data.bin"}


# ---------------------------------------------------------------------- hard links


def test_a_hard_link_to_outside_content_is_left_out(workspace: Path, store: SnapshotStore, tmp_path: Path) -> None:
    canary = b"CANARY-answers-1234567890"
    answers = tmp_path / "hidden" / "answers.csv"
    answers.parent.mkdir()
    answers.write_bytes(canary)
    os.link(answers, workspace / "submission.csv")
    snap = store.snapshot(workspace)
    assert snap.omitted == (("submission.csv", OUTSIDE_LINK),)
    assert store.manifest(snap.id)["files"] == {}
    for path in store.root.rglob("*"):
        assert not path.is_file() or canary not in path.read_bytes()


def test_hard_links_within_the_workspace_are_kept(workspace: Path, store: SnapshotStore) -> None:
    write(workspace / "model.py", "weights = 1\n")
    (workspace / "backup").mkdir()
    os.link(workspace / "model.py", workspace / "backup" / "model.py")
    snap = store.snapshot(workspace)
    assert snap.omitted == ()
    assert set(store.manifest(snap.id)["files"]) == {"model.py", "backup/model.py"}


def test_read_only_data_may_be_linked_from_outside(workspace: Path, store: SnapshotStore, tmp_path: Path) -> None:
    cached = write(tmp_path / "cache" / "train.csv", "a,b\n1,2\n")
    os.link(cached, workspace / "train.csv")
    snap = store.snapshot(workspace, link_paths=["train.csv"])
    assert snap.omitted == ()
    assert set(store.manifest(snap.id)["files"]) == {"train.csv"}


# ---------------------------------------------------------------------- symlinks


def test_a_symlink_is_recorded_as_a_link_and_given_to_graders_as_nothing(
    workspace: Path, store: SnapshotStore, tmp_path: Path
) -> None:
    canary = b"CANARY-credential-0987654321"
    secret = tmp_path / "credentials"
    secret.write_bytes(canary)
    os.symlink(secret, workspace / "submission.csv")
    os.symlink(tmp_path, workspace / "outside")
    write(workspace / "train.py", "print(1)\n")
    snap = store.snapshot(workspace)
    files = store.manifest(snap.id)["files"]
    assert files["submission.csv"] == {"symlink": str(secret)}
    assert files["outside"] == {"symlink": str(tmp_path)}
    assert not any(path.startswith("outside/") for path in files)

    dest = tmp_path / "graded"
    skipped = store.materialize_regular(snap.id, dest)
    assert sorted(skipped) == ["outside", "submission.csv"]
    assert sorted(p.name for p in dest.iterdir()) == ["train.py"]
    for path in store.root.rglob("*"):
        assert not path.is_file() or canary not in path.read_bytes()

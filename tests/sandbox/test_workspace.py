"""The host workspace on its own: its folder's lifetime, and the one record of linked data that
every backend relies on to keep the data cache from being written through a hard link."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from pytest_mlab.errors import EnvError, SandboxError
from pytest_mlab.sandbox.workspace import HostWorkspace, remove_tree


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    (folder / "sub").mkdir(parents=True)
    (folder / "train.csv").write_bytes(b"a,b\n1,2\n")
    (folder / "sub" / "test.csv").write_bytes(b"a\n3\n")
    return folder


@pytest.fixture
def files(tmp_path: Path):
    workspace = HostWorkspace(tmp_path / "ws")
    yield workspace
    workspace.close()


def test_an_owned_folder_is_removed_at_close_or_when_collected():
    closed = HostWorkspace()
    closed.write("deep/file.txt", b"x")
    (closed.root / "deep").chmod(0)  # the agent may leave unreadable dirs
    root = closed.root
    assert root.name.startswith("mlab-ws-") and root == root.resolve()
    closed.close()
    closed.close()
    assert not root.exists()
    forgotten = HostWorkspace()
    root = forgotten.root
    del forgotten
    gc.collect()
    assert not root.exists()


def test_a_given_folder_is_kept_and_a_closed_workspace_names_its_sandbox(tmp_path: Path):
    workspace = HostWorkspace(tmp_path / "given", sandbox="docker")
    workspace.write("kept.txt", b"kept")
    workspace.close()
    assert (tmp_path / "given" / "kept.txt").read_bytes() == b"kept"
    with pytest.raises(SandboxError, match="the docker sandbox is already closed"):
        workspace.read("kept.txt")
    (tmp_path / "file").write_text("x")
    with pytest.raises(SandboxError, match="not a directory"):
        HostWorkspace(tmp_path / "file")


def test_linked_files_are_recorded_and_stop_counting_once_replaced(files: HostWorkspace, cache: Path):
    files.copy_in(cache, "data", link=True)
    files.copy_in(cache / "train.csv", "copied.csv")
    linked = sorted(files.linked.still_linked())
    assert linked == [str(files.root / "data" / "sub" / "test.csv"), str(files.root / "data" / "train.csv")]
    files.write("data/train.csv", b"the agent's own")  # the harness replaces the link, never writes through it
    assert files.linked.still_linked() == [str(files.root / "data" / "sub" / "test.csv")]
    assert (cache / "train.csv").read_bytes() == b"a,b\n1,2\n"


def test_a_linked_inode_is_known_under_any_name(files: HostWorkspace, cache: Path):
    """A backend that hands the workspace to another user (docker) must spare the cache's inode
    wherever code in the sandbox moved it; a path alone would lose it."""
    files.copy_in(cache / "train.csv", "train.csv", link=True)
    os.rename(files.root / "train.csv", files.root / "moved.csv")
    assert files.linked.still_linked() == []
    assert files.linked.holds(os.lstat(files.root / "moved.csv"))
    files.write("own.csv", b"x")
    assert not files.linked.holds(os.lstat(files.root / "own.csv"))


def test_may_link_decides_between_a_link_and_a_copy(tmp_path: Path, cache: Path):
    asked = []
    workspace = HostWorkspace(tmp_path / "ws", may_link=lambda source: asked.append(source) or False)
    try:
        workspace.copy_in(cache / "train.csv", "train.csv", link=True)
        assert asked == [str(cache / "train.csv")]
        assert (workspace.root / "train.csv").stat().st_ino != (cache / "train.csv").stat().st_ino
        assert workspace.linked.still_linked() == []
    finally:
        workspace.close()


def test_a_failed_link_falls_back_to_an_unrecorded_copy(files: HostWorkspace, cache: Path, monkeypatch):
    def cross_device(source, destination):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", cross_device)
    files.copy_in(cache / "train.csv", "train.csv", link=True)
    assert files.read("train.csv") == b"a,b\n1,2\n"
    assert files.linked.still_linked() == []


def test_placing_a_file_never_follows_a_symlink_out(files: HostWorkspace, cache: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (files.root / "data").mkdir()
    (files.root / "data" / "sub").symlink_to(outside)  # planted by the agent's code
    with pytest.raises(EnvError, match="outside the workspace"):
        files.copy_in(cache, "data", link=True)
    assert list(outside.iterdir()) == []


def test_remove_tree_does_not_follow_symlinks(tmp_path: Path):
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "file").write_text("x")
    doomed = tmp_path / "doomed"
    (doomed / "locked").mkdir(parents=True)
    (doomed / "link").symlink_to(keep)
    (doomed / "locked").chmod(0)
    remove_tree(doomed)
    remove_tree(doomed)  # already gone: nothing to do
    assert not doomed.exists() and (keep / "file").read_text() == "x"

"""The disk quota the kernel enforces for bwrap and docker sandboxes (sandbox/quota_mount.py): writes past the quota
or the file cap fail inside the command, linked data is neither counted nor writable, and nothing
stays mounted after close or after the sweep of a killed session's leftovers."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pytest_mlab.sandbox import SandboxOptions, leftovers, open_sandbox, quota_mount
from pytest_mlab.sandbox.registry import sandbox_unavailable
from tests.security.test_containment import dead_owner

MiB = 1 << 20
WRITE_ALL = ("import os, sys\nn = 0\ntry:\n    for i in range(int(sys.argv[1])):\n"
             "        open(f'f{i}', 'wb').write(os.urandom(int(sys.argv[2])))\n        n += 1\n"
             "except OSError as exc:\n    print('refused after', n, exc.errno)\n")

needs_root_bwrap = pytest.mark.skipif(os.geteuid() != 0 or sandbox_unavailable("bwrap") is not None,
                                      reason="the quota's mounts need root and bwrap")
#: the backends that mount the quota: bwrap, and docker on this machine's daemon
QUOTA_KINDS = [pytest.param(kind, marks=pytest.mark.skipif(
    os.geteuid() != 0 or sandbox_unavailable(kind) is not None, reason=f"the quota's mounts need root and {kind}"))
    for kind in ("bwrap", "docker")]


def mounted(path: Path) -> bool:
    return str(path) in Path("/proc/self/mountinfo").read_text()


@pytest.fixture(params=QUOTA_KINDS)
def sandbox(request, tmp_path):  # noqa: ANN001
    data = tmp_path / "train.csv"
    data.write_bytes(os.urandom(4 * MiB))
    box = open_sandbox(request.param, options=SandboxOptions(disk=8 * MiB, workspace_files=200, label="quota"))
    box.copy_in(data, "train.csv", link=True)
    yield box
    box.close()


def test_many_files_each_under_the_quota_fail_inside_once_together_past_it(sandbox):
    result = sandbox.exec(["python", "-c", WRITE_ALL, "10", str(1 * MiB)], timeout=60, output_limit=10_000)
    assert sandbox.quota_enforced == "file system"
    assert "refused after 7 28" in result.stdout or "refused after 8 28" in result.stdout, result.stdout  # ENOSPC
    assert (sandbox.workspace / "train.csv").stat().st_size == 4 * MiB, "linked data is not counted"


def test_files_past_the_file_cap_fail_inside(sandbox):
    result = sandbox.exec(["python", "-c", WRITE_ALL, "1000", "0"], timeout=60, output_limit=10_000)
    refused = int(result.stdout.split()[2])
    assert 200 <= refused < 300 and result.stdout.split()[3] == "28", result.stdout


def test_linked_data_stays_read_only_and_the_mounts_go_at_close(tmp_path, sandbox):
    result = sandbox.exec(["python", "-c", "open('train.csv', 'ab').write(b'x')"], timeout=60, output_limit=10_000)
    # bwrap binds linked data read-only; docker's sandbox user may not write the harness's file
    assert "Read-only file system" in result.stderr or "Permission denied" in result.stderr, result.stderr
    workspace, folder = sandbox.workspace, sandbox._quota.folder
    assert mounted(workspace) and mounted(folder)
    sandbox.close()
    assert not mounted(workspace) and not mounted(folder)
    assert not os.path.lexists(workspace) and not os.path.lexists(folder)
    assert (tmp_path / "train.csv").stat().st_size == 4 * MiB


@needs_root_bwrap
def test_the_sweep_unmounts_and_removes_a_dead_sessions_quota(tmp_path, monkeypatch):
    dead = dead_owner()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(quota_mount, "owned_prefix", lambda kind: f"mlab-{kind}-{dead}-")
    workspace = tmp_path / f"mlab-ws-{dead}-x"
    workspace.mkdir()
    (workspace / "starter.py").write_text("print(1)\n")
    mount = quota_mount.mount_quota(workspace, size=8 * MiB, inodes=100)
    assert not isinstance(mount, str), mount
    (workspace / "new.txt").write_text("written on the quota")
    assert mounted(workspace) and mounted(mount.folder)
    swept = leftovers.sweep_temp_folders(tmp_path)
    assert sorted(swept) == sorted([workspace, mount.folder])
    assert not mounted(workspace) and not mounted(mount.folder)


def test_without_root_the_quota_is_checked_after_each_step(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert quota_mount.mount_quota(Path(tempfile.gettempdir()), size=MiB, inodes=10) == \
        "mounting a size-limited file system needs root"


def test_a_snapshot_links_the_data_from_under_the_overlay_instead_of_copying_it(tmp_path, sandbox):
    """Through the overlay (another device) a hard link fails: without the folder as it was under
    it, each run's store would get a copy of the whole dataset."""
    from pytest_mlab.trace import SnapshotStore

    sandbox.exec(["python", "-c", "open('notes.txt', 'w').write('x')"], timeout=60, output_limit=10_000)
    assert sandbox.quota_enforced == "file system" and sandbox.lower_layer is not None
    with SnapshotStore(tmp_path / "snapshots") as store:
        store.snapshot(sandbox.workspace, link_paths={"train.csv"}, lower=sandbox.lower_layer)
    blobs = [path for path in (tmp_path / "snapshots" / "blobs").rglob("*") if path.is_file()]
    data = next(path for path in blobs if path.stat().st_size == 4 * MiB)
    assert data.stat().st_ino == (tmp_path / "train.csv").stat().st_ino, "the data blob is a copy"

"""The disk quota a bwrap sandbox's kernel enforces (sandbox/quota_mount.py): writes past the quota
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


def mounted(path: Path) -> bool:
    return str(path) in Path("/proc/self/mountinfo").read_text()


@pytest.fixture
def sandbox(tmp_path):  # noqa: ANN001
    data = tmp_path / "train.csv"
    data.write_bytes(os.urandom(4 * MiB))
    box = open_sandbox("bwrap", options=SandboxOptions(disk=8 * MiB, workspace_files=200, label="quota"))
    box.copy_in(data, "train.csv", link=True)
    yield box
    box.close()


@needs_root_bwrap
def test_many_files_each_under_the_quota_fail_inside_once_together_past_it(sandbox):
    result = sandbox.exec(["python", "-c", WRITE_ALL, "10", str(1 * MiB)], timeout=60, output_limit=10_000)
    assert sandbox.quota_enforced == "file system"
    assert "refused after 7 28" in result.stdout or "refused after 8 28" in result.stdout, result.stdout  # ENOSPC
    assert (sandbox.workspace / "train.csv").stat().st_size == 4 * MiB, "linked data is not counted"


@needs_root_bwrap
def test_files_past_the_file_cap_fail_inside(sandbox):
    result = sandbox.exec(["python", "-c", WRITE_ALL, "1000", "0"], timeout=60, output_limit=10_000)
    refused = int(result.stdout.split()[2])
    assert 200 <= refused < 300 and result.stdout.split()[3] == "28", result.stdout


@needs_root_bwrap
def test_linked_data_stays_read_only_and_the_mounts_go_at_close(tmp_path, sandbox):
    result = sandbox.exec(["python", "-c", "open('train.csv', 'ab').write(b'x')"], timeout=60, output_limit=10_000)
    assert "Read-only file system" in result.stderr
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

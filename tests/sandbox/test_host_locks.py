"""The machine's lock folder: one per machine, shared by every session whatever its results folder,
writable by every user, never sent elsewhere by a planted link."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.gpus import GpuPool
from pytest_mlab.sandbox.host_locks import LOCKS_VARIABLE, locks_root, machine_lock_folder, make_shared, open_lock_file


@pytest.fixture
def locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "locks"
    monkeypatch.setenv(LOCKS_VARIABLE, str(root))
    return root


def test_the_default_is_the_machines_own_folder_not_a_results_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOCKS_VARIABLE)
    assert locks_root() in (Path("/run/lock/pytest-mlab"), Path(tempfile.gettempdir()) / "pytest-mlab-locks")


def test_nothing_is_made_until_a_lock_is_taken(locks: Path) -> None:
    GpuPool.on_this_machine(("0",))
    assert not locks.exists()


def test_folders_and_files_are_shared_by_every_user(locks: Path) -> None:
    folder = machine_lock_folder("gpus", "this-machine")
    make_shared(folder)
    for level in (locks, locks / "gpus", folder):
        assert stat.S_IMODE(os.stat(level).st_mode) == 0o1777, level
    os.umask(old := os.umask(0o077))
    try:
        with open_lock_file(folder / "gpu-0.lock"):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(folder / "gpu-0.lock").st_mode) == 0o666


def test_a_folder_that_exists_keeps_its_mode(locks: Path) -> None:
    locks.mkdir(mode=0o700)
    make_shared(locks / "gpus")
    assert stat.S_IMODE(os.stat(locks).st_mode) == 0o700


def test_a_link_planted_where_a_lock_folder_goes_is_refused(locks: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    locks.mkdir()
    (locks / "gpus").symlink_to(elsewhere)
    with pytest.raises(SandboxError, match=f"is not a folder.*{LOCKS_VARIABLE}"):
        make_shared(locks / "gpus")
    with pytest.raises(SandboxError, match=LOCKS_VARIABLE):
        open_lock_file(locks / "gpus")  # a link is not followed to a lock file either
    assert list(elsewhere.iterdir()) == []


def test_an_unwritable_lock_folder_names_the_variable_to_set(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(LOCKS_VARIABLE, str(tmp_path / "missing" / "deeper" / "locks"))
    (tmp_path / "missing").write_text("a file, not a folder")
    with pytest.raises(SandboxError, match=f"cannot use .*missing.*set {LOCKS_VARIABLE}"):
        make_shared(machine_lock_folder("gpus"))


SESSION = textwrap.dedent("""
    import sys, time
    from pytest_mlab.sandbox.gpus import GpuPool
    with GpuPool.on_this_machine(("0",)).lease(sys.argv[1], required=False) as lease:
        print(",".join(lease.ids) or "none", flush=True)
        time.sleep(float(sys.argv[2]))
""")


def test_two_sessions_with_different_results_folders_never_share_a_gpu(locks: Path, tmp_path: Path) -> None:
    """Each session below writes its results elsewhere (its own working folder): the GPU is still
    the machine's, held by one of them at a time."""
    sessions = []
    for name in ("first", "second"):
        folder = tmp_path / name
        folder.mkdir()
        sessions.append(subprocess.Popen([sys.executable, "-c", SESSION, name, "3" if name == "first" else "0"],
                                         cwd=folder, stdout=subprocess.PIPE, text=True))
        if name == "first":
            assert sessions[0].stdout.readline().strip() == "0"
    outputs = [process.communicate(timeout=60)[0].strip() for process in sessions]
    assert outputs[1] == "none"  # the first session held GPU 0 all along

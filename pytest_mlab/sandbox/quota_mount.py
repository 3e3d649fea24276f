"""A disk quota the kernel enforces: the workspace's new files land on a size-limited file system.

Checking the workspace's size after each step leaves a whole command to fill the disk with many
files each under the quota. So where the harness may mount file systems (root, or
CAP_SYS_ADMIN), a bwrap sandbox's workspace gets, before its first command, an overlay over
itself: the folder as it is (starter files, data hard-linked from the cache) is the read-only
lower layer, and everything written afterwards, by the command or by the harness's file actions,
goes to the upper layer on an ext4 file system in a sparse image file of the quota's size, with
as many inodes as the workspace's file limit. Past either, writes fail inside the sandbox with
``ENOSPC``. Read-only data is not counted and is never copied, and the cache is safe even from a
write that got through: overlayfs copies a file up before changing it.

The harness reads the mounted folder like any other (snapshots, grading, ``remove_tree``). Both
mounts are undone at close; the image lives in a temp folder named for its creator
(:mod:`.owner`), so the sweep after a killed session finds it and :func:`unmount_below` detaches
what is still mounted there (the overlay too, which names its upper layer) before removing it.
Where mounting is not possible, :func:`mount_quota` says why and the sandbox keeps the check
after each step.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_mlab.sandbox.owner import owned_prefix
from pytest_mlab.sandbox.workspace import remove_tree
from pytest_mlab.spec.models import DEFAULT_DISK

if TYPE_CHECKING:
    from pytest_mlab.sandbox.base import Sandbox

_INODE_BYTES = 256  # ext4's inode size: the inode table is carved out of the image
_SLACK = 16 << 20  # ext4's own metadata (bitmaps, group descriptors, root folder) beyond the quota
_TIMEOUT_S = 30


@dataclass
class QuotaMount:
    """The overlay mounted on a workspace and the image under it; :meth:`close` undoes both."""

    workspace: Path
    folder: Path  # the temp folder holding the image and its mount point
    #: the workspace folder as it was before the overlay (opened O_PATH before mounting): the
    #: snapshot hard-links read-only data from it into its store. Through the overlay, whose
    #: device differs, a link fails, and each run would copy its whole dataset into its store.
    lower: int | None = None


    @property
    def upper(self) -> Path:
        return self.folder / "mnt" / "upper"

    def close(self) -> None:
        """Unmount the overlay and the image (lazily if something still holds them), then remove
        the image's folder. The workspace's own folder is left for its owner to remove."""
        unmount(self.workspace)
        unmount_below(self.folder)
        remove_tree(self.folder)
        if self.lower is not None:
            os.close(self.lower)
            self.lower = None


NOT_YET = "not yet: mounted before the first command"


def enforce_quota(sandbox: "Sandbox") -> tuple[QuotaMount | None, str]:
    """Mount the sandbox's quota (its options' ``disk`` bytes, ``workspace_files`` inodes) over its
    workspace, once its starter files and data are in and before its first command; the mount (to
    close before the workspace is removed) and how the quota now holds, for ``quota_enforced``:
    ``file system``, or why it stays a check after each step. bwrap and docker on this machine's
    daemon (whose bind mount of the workspace then shows the mounted file system) share it."""
    mounted = mount_quota(sandbox.workspace, size=sandbox.options.disk or DEFAULT_DISK,
                          inodes=sandbox.options.workspace_files + 64)
    if isinstance(mounted, str):
        return None, f"checked after each step ({mounted})"
    sandbox.files.linked.refresh()  # linked data now reports the overlay's device
    weakref.finalize(sandbox, mounted.close)  # before the workspace's own removal, if never closed
    return mounted, "file system"


def mount_quota(workspace: Path, *, size: int, inodes: int) -> QuotaMount | str:
    """Mount a quota of ``size`` bytes and ``inodes`` files over ``workspace``, or why it cannot be."""
    if os.geteuid() != 0:
        return "mounting a size-limited file system needs root"
    missing = [tool for tool in ("mount", "umount", "mkfs.ext4") if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not found"
    folder = Path(tempfile.mkdtemp(prefix=owned_prefix("quota")))
    image, mnt = folder / "image", folder / "mnt"
    mnt.mkdir()
    steps = [
        ["mkfs.ext4", "-q", "-F", "-N", str(inodes), "-m", "0", "-O", "^has_journal",
         "-E", "nodiscard,lazy_itable_init=1", str(image)],
        ["mount", "-o", "loop,nosuid,nodev", str(image), str(mnt)],
    ]
    try:
        with open(image, "wb") as handle:
            handle.truncate(size + inodes * _INODE_BYTES + _SLACK)  # sparse: costs no disk until written
        for argv in steps:
            _run(argv)
        (mnt / "upper").mkdir()
        (mnt / "work").mkdir()
        _reserve_beyond(mnt, size)
        # the folder as it is stays reachable through this descriptor: its files (data linked from
        # the cache among them) can be hard-linked from there (see QuotaMount.lower)
        lower = os.open(workspace, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            _run(["mount", "-t", "overlay", "overlay", "-o",
                  f"lowerdir={workspace},upperdir={mnt / 'upper'},workdir={mnt / 'work'}", str(workspace)])
        except BaseException:
            os.close(lower)
            raise
    except (OSError, subprocess.SubprocessError) as exc:
        unmount_below(folder)
        remove_tree(folder)
        return f"mounting a size-limited file system failed: {exc}"
    return QuotaMount(workspace, folder, lower)


def _reserve_beyond(mnt: Path, size: int) -> None:
    """Take what the new file system has beyond ``size`` bytes into a file outside the layers, so
    the workspace gets the quota to the block, whatever ext4's own overhead was."""
    info = os.statvfs(mnt)
    extra = info.f_bavail * info.f_frsize - size
    if extra > 0:
        fd = os.open(mnt / "reserved", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, extra)
        finally:
            os.close(fd)


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S)
    if proc.returncode != 0:
        raise subprocess.SubprocessError(f"{argv[0]} exited with {proc.returncode}: {proc.stderr.strip()[:200]}")


def unmount(path: Path) -> None:
    """Unmount ``path`` if something is mounted there; lazily when it is busy."""
    if _mounts(lambda point, _options: point == str(path)):
        _detach(str(path))


def unmount_below(folder: Path) -> None:
    """Detach every mount at or below ``folder``, and every overlay whose layers are in it (a
    workspace's, mounted elsewhere), the overlays first. Never raises."""
    top = str(folder)
    named = _mounts(lambda point, options: f"={top}/" in options or f":{top}/" in options)
    below = _mounts(lambda point, _options: point == top or point.startswith(top + "/"))
    for point in [*named, *sorted(below, key=len, reverse=True)]:
        _detach(point)


def _detach(point: str) -> None:
    for argv in (["umount", point], ["umount", "-l", point]):
        try:
            if subprocess.run(argv, capture_output=True, timeout=_TIMEOUT_S).returncode == 0:
                return
        except (OSError, subprocess.SubprocessError):
            continue


def _mounts(wanted) -> list[str]:  # noqa: ANN001  (a predicate on mount point and options)
    """The mount points of this mount namespace that ``wanted(point, super options)`` picks."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    points = []
    for line in lines:
        fields, _sep, rest = line.partition(" - ")
        parts, tail = fields.split(), rest.split()
        if len(parts) < 5 or len(tail) < 3:
            continue
        point = _unescape(parts[4])
        if wanted(point, _unescape(tail[2])) and point not in points:
            points.append(point)
    return points


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code in ("040", "011", "012", "134"):
        text = text.replace("\\" + code, chr(int(code, 8)))
    return text

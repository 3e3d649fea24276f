"""Scanning a workspace into manifest entries: what a snapshot keeps, storing new content as it goes.

The workspace belongs to an agent that may want to smuggle content in:

* A symlink is recorded as a link (the trace shows it), never as content.
* A regular file whose inode has more links than the workspace holds is a hard link to content
  outside it (possible where the agent can name any file): it is left out. Only the read-only
  data the harness linked in (``link_paths``) may have outside links.
* A sparse file (far fewer blocks on disk than its length) is left out rather than inflated to
  its length.
* :class:`SnapshotCaps` bound the file size, the files per snapshot and the new bytes per store
  (one run). Files are taken in walk order (each directory's files by name, then its
  subdirectories by name); one is kept only while it fits. Read-only data never counts.
* Everything left out is recorded as ``(path, reason)``.
* A workspace beyond its depth, entry or disk limits gets no snapshot: the scan stops there with
  :class:`~pytest_mlab.errors.WorkspaceOverLimits` (the agent's failure), having read no more
  than the limits allow.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pytest_mlab.errors import WorkspaceOverLimits
from pytest_mlab.trace.snapshots.blobs import DIGEST_KEY, BlobStore, StoredBlob
from pytest_mlab.trace.snapshots import data_digests
from pytest_mlab.trace.snapshots.digest_cache import RACY_WINDOW_NS, RacyWindow, StatKey
from pytest_mlab.trace.snapshots.manifests import Entries, recorded_mode
from pytest_mlab.trace.snapshots.workspace import WalkBounds, open_regular, readlink, unchanged, walk, wants_link

SPARSE_MIN_SIZE = 1 << 20  # smaller files are never called sparse


@dataclass(frozen=True)
class SnapshotCaps:
    """How much a store's snapshots may keep; ``None``: no cap. Read-only data never counts.

    ``run_bytes``: new bytes the store may add over its life (one run); ``files``: files and
    symlinks kept in one snapshot; ``file_size``: the largest file kept. Beyond ``disk`` (bytes on
    disk of the workspace's own files) or ``bounds`` (depth, entries) no snapshot is taken at all:
    :class:`~pytest_mlab.errors.WorkspaceOverLimits`, the agent's failure.
    """

    run_bytes: int | None = None
    files: int | None = None
    file_size: int | None = None
    disk: int | None = None
    bounds: WalkBounds = WalkBounds()


def human_size(size: int) -> str:
    """``5.0 GiB``, ``4 GiB``, ``312 KiB``, ``17 bytes``: sizes as the agent and the user read them."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} byte" + ("" if size == 1 else "s")


@dataclass
class Scan:
    """One snapshot's running state: caps and what they have used, what was left out.

    ``recalled``: the digests the store's previous snapshot cached; ``cache``: this one's.
    """

    top: str
    skip: tuple[int, int] | None  # the store's own folder, if it lies in the workspace
    links: frozenset[str]
    caps: SnapshotCaps
    bytes_left: int | None
    recalled: Mapping[StatKey, str] = field(default_factory=dict)
    digests_file: Path | None = None  # read-only data's digests remembered across processes
    lower: int | None = None  # a descriptor of the workspace under a quota's overlay, to link data from
    window: RacyWindow = field(default_factory=RacyWindow)
    kept: int = 0  # files counted against caps.files
    added: int = 0  # bytes added to the store, read-only data included
    spent: int = 0  # bytes added to the store, read-only data excluded
    omitted: list[tuple[str, str]] = field(default_factory=list)
    cache: dict[StatKey, str] = field(default_factory=dict)  # this snapshot's cacheable digests
    unleased: list[tuple[StatKey, str]] = field(default_factory=list)  # data to cache after a tick
    inside_links: dict[tuple[int, int], int] | None = None
    on_disk: int = 0  # bytes on disk of the workspace's own files seen so far

    def count_disk(self, rel: str, st: os.stat_result) -> None:
        """Add a file of the agent's to the workspace's disk use; past ``caps.disk`` the workspace fails."""
        self.on_disk += st.st_blocks * 512
        limit = self.caps.disk
        if limit is not None and self.on_disk > limit:
            raise WorkspaceOverLimits(
                f"the workspace's files take more than its disk quota of {human_size(limit)} "
                f"(found at {rel}); the limit is the task's limits.disk")

    def refusal(self, st: os.stat_result) -> str | None:
        """Why a regular file that is not read-only data cannot be kept, judged on its stat."""
        limit = self.caps.file_size
        if limit is not None and st.st_size > limit:
            return f"{human_size(st.st_size)}, over the {human_size(limit)} file size limit"
        on_disk = st.st_blocks * 512
        if st.st_size >= SPARSE_MIN_SIZE and on_disk < st.st_size // 2:
            return (f"a sparse file: {human_size(st.st_size)} long but {human_size(on_disk)} on disk; "
                    "write its real content instead")
        if st.st_nlink > 1 and self._links_inside(st) < st.st_nlink:
            return "a hard link to a file outside the workspace"
        return None

    def _links_inside(self, st: os.stat_result) -> int:
        """How many names the workspace has for this inode (counted once per snapshot, on need)."""
        if self.inside_links is None:
            self.inside_links = {}
            for _rel, _fd, _name, found in walk(self.top, self.skip, set(), self.caps.bounds):
                if stat.S_ISREG(found.st_mode) and found.st_nlink > 1:
                    key = (found.st_dev, found.st_ino)
                    self.inside_links[key] = self.inside_links.get(key, 0) + 1
        return self.inside_links.get((st.st_dev, st.st_ino), 0)

    def over_budget(self, size: int) -> str | None:
        if self.bytes_left is not None and size > self.bytes_left:
            return (f"{human_size(size)}, more than is left of the run's "
                    f"{human_size(self.caps.run_bytes or 0)} snapshot limit")
        return None

    def copy_limit(self) -> int | None:
        """The most bytes one copy may take (a file may grow while it is read)."""
        limits = [x for x in (self.caps.file_size, self.bytes_left) if x is not None]
        return min(limits) if limits else None

    def spend(self, added: int) -> None:
        self.spent += added
        if self.bytes_left is not None:
            self.bytes_left = max(0, self.bytes_left - added)


def scan_workspace(scan: Scan, blobs: BlobStore, files: Entries, dirs: set[str]) -> None:
    """Fill ``files`` and ``dirs`` from the workspace, storing new content as it goes."""
    for rel, dir_fd, name, st in walk(scan.top, scan.skip, dirs, scan.caps.bounds):
        data = wants_link(rel, scan.links)
        if not data:
            scan.count_disk(rel, st)
        if not data and scan.caps.files is not None and scan.kept >= scan.caps.files:
            scan.omitted.append((rel, f"over the limit of {scan.caps.files:,} files in one snapshot"))
            continue
        if stat.S_ISLNK(st.st_mode):
            target = readlink(name, dir_fd)
            if target is not None:
                files[rel] = {"symlink": target}
                scan.kept += not data
            continue
        entry = _store_file(scan, blobs, rel, dir_fd, name, st, data)
        if entry is not None:
            files[rel] = entry
            scan.kept += not data
    settle_unleased(scan)


def _store_file(scan: Scan, blobs: BlobStore, rel: str, dir_fd: int, name: str, st: os.stat_result,
                data: bool) -> dict[str, Any] | None:
    """Recall one regular file's digest from its stat, else read it once (hashing it while
    it is copied or linked into the store); None if it is left out."""
    reason = None if data else scan.refusal(st)
    if reason is not None:
        scan.omitted.append((rel, reason))
        return None
    digest = _recall(scan, blobs, rel, st, data)
    if digest is not None:
        return {DIGEST_KEY: digest, "size": st.st_size, "mode": recorded_mode(st.st_mode)}
    fh = open_regular(rel, name, dir_fd)
    if fh is None:
        return None
    with fh:
        st = os.fstat(fh.fileno())  # the file we read, whatever the name held at the listing
        reason = None if data else scan.refusal(st)
        if reason is not None:
            scan.omitted.append((rel, reason))
            return None
        stored = _store_data(scan, blobs, rel, fh, st, name, dir_fd) if data else _store_own(scan, blobs, rel, fh, st)
        if stored is None:
            return None
    scan.added += stored.added
    if not data:
        scan.spend(stored.added)
    return {DIGEST_KEY: stored.digest, "size": stored.size, "mode": recorded_mode(st.st_mode)}


def _recall(scan: Scan, blobs: BlobStore, rel: str, st: os.stat_result, data: bool) -> str | None:
    """The digest of an unchanged file whose blob is stored, from its listing's stat alone."""
    key: StatKey = (rel, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    digest = data_digests.recall(st) if data else None
    if digest is None:  # own files, and data no lease vouches for (see _remember_unleased)
        digest = scan.recalled.get(key)
        if digest is not None:
            scan.cache[key] = digest
    if digest is None or not blobs.has(digest, st.st_size):
        return None
    return digest


def _store_own(scan: Scan, blobs: BlobStore, rel: str, fh: BinaryIO, st: os.stat_result) -> StoredBlob | None:
    """A workspace file not recalled: copied into the store while it is hashed."""
    reason = scan.over_budget(st.st_size)
    if reason is not None:
        scan.omitted.append((rel, reason))
        return None
    cacheable = scan.window.cacheable(st.st_ctime_ns)
    stored = blobs.copy_in(fh, scan.copy_limit())
    if stored is None:
        now = os.fstat(fh.fileno())
        scan.omitted.append((rel, scan.refusal(now) or scan.over_budget(max(now.st_size, st.st_size + 1))
                             or "it grew past the snapshot limits while it was being saved"))
        return None
    if cacheable and unchanged(fh, st) and stored.size == st.st_size:
        scan.cache[(rel, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)] = stored.digest
    return stored


def _store_data(scan: Scan, blobs: BlobStore, rel: str, fh: BinaryIO, st: os.stat_result, name: str,
                dir_fd: int) -> StoredBlob:
    """Read-only data not recalled: hard-linked into the store and hashed through the link
    (one read), else copied while hashed, unless a lease or an entry vouches for its digest
    (data_digests.py); the lease is kept, so later stores of the process trust that digest."""
    known, leased = data_digests.lookup(fh.fileno(), scan.digests_file)
    try:
        stored = blobs.link_in(fh, st, name, dir_fd, known)
        if stored is None and scan.lower is not None:  # the same inode, outside the quota's overlay
            stored = blobs.link_in(fh, st, rel, scan.lower, known)
        if stored is None:
            stored = blobs.copy_in(fh, None)
            assert stored is not None  # no limit
    except BaseException:
        if leased is not None:
            os.close(leased)
        raise
    if leased is not None:
        data_digests.keep(leased, stored.digest)
    elif unchanged(fh, st, ctime=False) and stored.size == st.st_size:
        _remember_unleased(scan, rel, fh, stored.digest)
    return stored


def _remember_unleased(scan: Scan, rel: str, fh: BinaryIO, digest: str) -> None:
    """Where no lease can be had (another owner, a file system without leases), this store's
    later snapshots recognise the data by the stat it has after the store's own link, if that
    stat still holds a clock tick later (the racy rule of digest_cache.py; see settle_unleased)."""
    linked = os.fstat(fh.fileno())
    scan.unleased.append(((rel, linked.st_dev, linked.st_ino, linked.st_size, linked.st_mtime_ns,
                           linked.st_ctime_ns), digest))


def settle_unleased(scan: Scan) -> None:
    """One wait of a clock tick per snapshot, then cache the unleased data whose stat held."""
    if not scan.unleased:
        return
    time.sleep(RACY_WINDOW_NS / 1e9)
    for key, digest in scan.unleased:
        try:
            now = os.stat(os.path.join(scan.top, key[0]), follow_symlinks=False)
        except OSError:
            continue
        if (key[0], now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns, now.st_ctime_ns) == key:
            scan.cache[key] = digest

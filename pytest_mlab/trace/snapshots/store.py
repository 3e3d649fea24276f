"""The snapshot store: one call stores a workspace's state, costing only what changed since the
last; others read a snapshot back. It composes the parts, each in its own module: scanning the
workspace (scan.py), the blobs (blobs.py), the manifests (manifests.py) and materialising
(materialize.py).

Durability: nothing is fsynced per file. Each snapshot that stored something starts one sync of
the store's whole file system (``syncfs``, else ``sync``) in the background (durability.py) and
returns its id without waiting for the disk. The next snapshot, :meth:`SnapshotStore.settle` and
the run's result record (:meth:`SnapshotStore.wait_durable`) wait for that sync first, and raise
its error. So a crash of the process loses nothing (written pages stay in the kernel, which
writes them out); a power cut or kernel crash can lose the last snapshot before a result record
(its blobs or manifest missing or cut short, which readers report as a corrupt store, and a run
with no result record is run again by --mlab-resume), never one that a result record names. A
blob cut short is never reused: blobs.py reuses one only if its size is right.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_mlab.errors import TraceError
from pytest_mlab.trace.snapshots import data_digests
from pytest_mlab.trace.snapshots.blobs import BlobStore, entry_digest
from pytest_mlab.trace.snapshots.digest_cache import StatKey
from pytest_mlab.trace.snapshots.durability import BackgroundSync
from pytest_mlab.trace.snapshots.disk import stored_files
from pytest_mlab.trace.snapshots.manifests import Entries, ManifestStore, changes, empty_dirs
from pytest_mlab.trace.snapshots.materialize import materialize
from pytest_mlab.trace.snapshots.scan import Scan, SnapshotCaps, scan_workspace
from pytest_mlab.trace.snapshots.workspace import dev_ino, normalize_link_paths, wants_link


@dataclass(frozen=True)
class Snapshot:
    """One stored workspace state.

    ``files`` counts regular files and symlinks, ``bytes`` is the total size of the regular
    files, ``new_bytes`` what this call added to the store (new blobs, linked or copied, plus a
    new manifest); it is 0 when nothing changed since a stored state. ``omitted`` lists the
    ``(path, reason)`` of every file in the workspace the snapshot did not keep.
    """

    id: str
    files: int
    bytes: int
    new_bytes: int
    omitted: tuple[tuple[str, str], ...] = ()


class SnapshotStore:
    """A deduplicating store of workspace snapshots under ``root``.

    ``fsync=False`` skips the one sync per snapshot (readers, and tests that do not need
    durability). ``data_digests`` is the file where read-only data's digests are remembered
    across processes (data_digests.py): beside the prepared data, where no sandbox can write.
    """

    def __init__(self, root: Path | str, *, fsync: bool = True, data_digests: Path | None = None) -> None:
        self.root = Path(root)
        self.data_digests = data_digests
        self._blobs = BlobStore(self.root)
        self._manifests = ManifestStore(self.root)
        self._fsync = fsync
        self._sync = BackgroundSync(self.root)
        self._cache: dict[StatKey, str] = {}  # the last snapshot's cacheable digests
        self._durable: set[str] = set()  # snapshot ids this instance has synced
        self._run_bytes = 0  # bytes this instance added, read-only data excluded

    def snapshot(self, workspace: Path | str, *, link_paths: Collection[str] = (),
                 caps: SnapshotCaps = SnapshotCaps(), lower: int | None = None) -> Snapshot:
        """Store the current state of ``workspace`` and describe it, within ``caps``. ``lower``:
        a descriptor of the workspace folder under a quota's overlay (the sandbox's
        ``lower_layer``), to hard-link read-only data from."""
        self.wait_durable()
        links = normalize_link_paths(link_paths)
        top = os.path.realpath(workspace)  # fwalk yields nothing for a top that is a link
        if not os.path.isdir(top):
            raise TraceError(f"cannot snapshot {workspace}: it is not a directory")
        left = None if caps.run_bytes is None else max(0, caps.run_bytes - self._run_bytes)
        scan = Scan(top, dev_ino(self.root), links, caps, left, recalled=self._cache,
                    digests_file=self.data_digests, lower=lower)
        files: Entries = {}
        dirs: set[str] = set()
        renames = self._renames()
        try:
            scan_workspace(scan, self._blobs, files, dirs)
            snapshot_id, manifest_added = self._manifests.write(files, empty_dirs(dirs, files))
            self._make_durable(snapshot_id, wrote=self._renames() > renames)
        except OSError as exc:
            raise TraceError(f"cannot snapshot {workspace}: {exc}") from exc
        finally:
            self._run_bytes += scan.spent
        self._cache = scan.cache  # only this step's files: the cache cannot grow without bound
        self._run_bytes += manifest_added
        total = sum(entry.get("size", 0) for entry in files.values())
        return Snapshot(snapshot_id, len(files), total, scan.added + manifest_added, tuple(scan.omitted))

    def settle(self) -> None:
        """The run is over and the harness has made its last link to its data: remember the data's
        digests for later processes and give back this process's leases (data_digests.py), once
        the last snapshot is on disk."""
        try:
            self.wait_durable()
        finally:
            data_digests.settle(self.data_digests)

    def wait_durable(self) -> None:
        """Wait for the last snapshot's sync (a TraceError if it failed): call before recording
        anything that names a snapshot as final."""
        try:
            self._sync.wait()
        except TraceError:
            self._durable.clear()  # the next snapshot syncs again, whatever it stores
            raise

    def __enter__(self) -> SnapshotStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.settle()

    def _renames(self) -> int:
        """Blobs and manifests this instance put in place: whether a snapshot wrote anything."""
        return self._blobs.renames + self._manifests.renames

    def _make_durable(self, snapshot_id: str, *, wrote: bool) -> None:
        """One sync for the whole snapshot, started in the background (see the module docstring)."""
        if self._fsync and (wrote or snapshot_id not in self._durable):
            self._sync.start()
        self._durable.add(snapshot_id)

    # ------------------------------------------------------------------ reading

    def manifest(self, snapshot_id: str) -> dict[str, Any]:
        """The manifest of a stored snapshot: ``{"format", "files", "dirs"}``, deltas applied."""
        manifest = self._manifests.load(snapshot_id)
        return {"format": manifest["format"], "files": dict(manifest["files"]), "dirs": list(manifest["dirs"])}

    def file_entry(self, snapshot_id: str, rel: str) -> dict[str, Any] | None:
        """One path's manifest entry (a copy), without copying the whole manifest."""
        entry = self._manifests.load(snapshot_id)["files"].get(rel)
        return None if entry is None else dict(entry)

    def read_file(self, snapshot_id: str, rel: str) -> bytes | None:
        """One regular file's content in a snapshot; None for a symlink or a path it lacks."""
        entry = self._manifests.load(snapshot_id)["files"].get(rel)
        if entry is None or "symlink" in entry:
            return None
        digest = entry_digest(entry)
        try:
            data = self._blobs.path(digest).read_bytes()
        except FileNotFoundError:
            raise self._blobs.missing(digest, rel, snapshot_id) from None
        if len(data) != entry["size"]:
            raise self._blobs.cut_short(digest, rel, snapshot_id)
        return data

    def diff(self, old_id: str, new_id: str) -> dict[str, list[str]]:
        """Paths added, removed and changed (content, mode or link target) between two snapshots."""
        return changes(self._manifests.load(old_id)["files"], self._manifests.load(new_id)["files"])

    def materialize(self, snapshot_id: str, dest: Path | str, *, link: bool = True) -> None:
        """Recreate a snapshot's tree in ``dest`` (which must be absent or empty).

        With ``link`` files are hard links into the store where possible: cheap, but they must
        be treated as read-only, since editing one in place would change the stored blob.
        Copies get the recorded exec bit. Symlinks come back as symlinks.
        """
        materialize(self._manifests.load(snapshot_id), snapshot_id, dest, self._blobs, lambda rel: link,
                    symlinks=True)

    def materialize_regular(self, snapshot_id: str, dest: Path | str, *,
                            link_paths: Collection[str] = ()) -> list[str]:
        """Recreate a snapshot for grading or measuring: regular files only.

        Symlinks are left out (returned, so callers can say why a file is missing): a grader
        must never follow a link the agent made. Files under ``link_paths`` (read-only data)
        are hard links into the store, everything else is a private copy the reader may change.
        """
        links = normalize_link_paths(link_paths)
        return materialize(self._manifests.load(snapshot_id), snapshot_id, dest, self._blobs,
                           lambda rel: wants_link(rel, links), symlinks=False)

    def stored_bytes(self) -> int:
        """Size of all blobs and manifests, each inode counted once (temp files excluded)."""
        seen: set[tuple[int, int]] = set()
        total = 0
        for folder in (self._blobs.folder, self._manifests.folder):
            for path in stored_files(folder):
                st = path.stat(follow_symlinks=False)
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
        return total


"""Content-addressed workspace snapshots: each step stores only what changed, within limits.

Layout under the store root::

    blobs/<sha256[:2]>/<sha256>     file contents, one per distinct content
    manifests/<snapshot_id>.json    one per distinct workspace state

A manifest maps each relative path to ``{"sha256", "size", "mode"}`` for a regular file or
``{"symlink": target}`` for a symbolic link, and lists empty directories. Its id is the hash of
its canonical JSON, so identical steps share one manifest and the whole store is deduplicated.

On disk, a manifest is usually stored as a delta against the one written before it by the same
store (``{"base": id, "set": {changed entries}, "unset": [removed paths], "dirs": [...]}``), so a
step that changes one file of a 10,000-file workspace costs one entry, not 10,000. Every
``MAX_CHAIN``-th manifest is stored whole, bounding the work to read any one of them.

What a snapshot keeps (the workspace belongs to an agent that may want to smuggle content in):

* The walk never follows a symlink: it holds a directory fd at each level (``os.fwalk``) and
  opens files with ``O_NOFOLLOW``, so even a link swapped in mid-walk cannot make us copy what
  it points to. A symlink is recorded as a link (the trace shows it), never as content; graders
  are given regular files only (:meth:`SnapshotStore.materialize_regular`).
* A regular file whose inode has more links than the workspace holds is a hard link to content
  outside it (possible where the agent can name any file): it is left out. Only the read-only
  data the harness linked in (``link_paths``) may have outside links.
* Fifos, sockets and devices are skipped. A sparse file (far fewer blocks on disk than its
  length) is left out rather than inflated to its length.
* :class:`SnapshotCaps` bound the file size, the files per snapshot and the new bytes per store
  (one run). Files are taken in walk order (each directory's files by name, then its
  subdirectories by name); one is kept only while it fits. Read-only data never counts.
* Everything left out is returned in :attr:`Snapshot.omitted` as ``(path, reason)``.

Cost and safety:

* Each byte is read once. A file with no known digest is copied into a temp blob while it is
  hashed; read-only data is hard-linked into the store and hashed through the same inode.
* Unchanged files are not re-read: a per-store cache maps (path, device, inode, size, mtime,
  ctime) to the digest, and a process-wide cache maps read-only data's (device, inode, size,
  mtime) to its digest, so the next run in the same process does not hash that data again.
* The "racy clean" rule, and why the window can be a clock tick. The kernel stamps a write with
  its coarse clock, which lags the real clock by less than one tick. A digest is cached only if
  the file's change time is older than ``T - window``, where ``T`` is when its read began and the
  window is the tick plus a margin: any write that could escape the read happened after ``T``
  and so carries a stamp later than the cached one, which changes the key. The stamp checked is
  the ctime (it cannot be set back like the mtime can); read-only data, whose ctime changes each
  time it is linked, is keyed by mtime. A file changed within the window before the snapshot
  began makes the snapshot wait out the rest of the window, once (a few ms), rather than stay
  uncached; a file changed after the snapshot began is not cached. Timestamps with no sub-second
  part (filesystems that store seconds) get a two-second window and no wait. Writes through
  ``mmap``, or one ``write`` call lasting longer than the window, are beyond what stat shows.
* Blobs and manifests are written to a temp file and ``os.replace``-d into place, so a crash or a
  concurrent writer never leaves a partial one in view. Nothing is fsynced per file: before a
  snapshot's id is returned its whole file system is synced once (``syncfs``, else ``sync``), so
  everything a returned id needs is on disk. A power cut before that sync can leave a truncated
  blob no returned id names; a blob is reused only if its size is right.
* Paths in ``link_paths`` (large read-only data) are hard-linked into the store, costing no
  space. The blob then shares the workspace file's inode: editing that file in place would also
  change the stored blob, which is why this is only for data the agent must not modify.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, Callable

from pytest_mlab.errors import TraceError

_FORMAT = 1
MAX_CHAIN = 32  # deltas between two whole manifests
SPARSE_MIN_SIZE = 1 << 20  # smaller files are never called sparse
DATA_CACHE_SIZE = 4096  # digests of read-only data remembered across stores
_CHUNK = 1 << 20
_TMP_PREFIX = ".tmp-"
_ID_RE = re.compile(r"[0-9a-f]{16}")
_SHA_RE = re.compile(r"[0-9a-f]{64}")
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_CLOCK_REALTIME_COARSE = 5  # Linux; the clock file timestamps are taken from
_SECOND = 1_000_000_000

_new_hasher = hashlib.sha256  # the one hash of file content (tests count what it reads)

_StatKey = tuple[str, int, int, int, int, int]  # path, st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns
_DataKey = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns


def _clock_tick_ns() -> int:
    """How far a file timestamp may lag the real clock: the coarse clock's resolution."""
    try:
        return max(int(time.clock_getres(_CLOCK_REALTIME_COARSE) * _SECOND), 1_000_000)
    except (AttributeError, OSError):
        return 10_000_000


RACY_WINDOW_NS = _clock_tick_ns() + 1_000_000  # one tick plus a margin
_COARSE_WINDOW_NS = 2 * _SECOND  # for timestamps stored in whole seconds


@dataclass(frozen=True)
class SnapshotCaps:
    """How much a store's snapshots may keep; ``None``: no cap. Read-only data never counts.

    ``run_bytes``: new bytes the store may add over its life (one run); ``files``: files and
    symlinks kept in one snapshot; ``file_size``: the largest file kept.
    """

    run_bytes: int | None = None
    files: int | None = None
    file_size: int | None = None


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


@dataclass(frozen=True)
class _Stored:
    """Where a file's content ended up: its digest, its size, and the bytes newly stored."""

    digest: str
    size: int
    added: int


@dataclass
class _Scan:
    """One snapshot's running state: caps and what they have used, what was left out."""

    top: str
    skip: tuple[int, int] | None  # the store's own folder, if it lies in the workspace
    links: frozenset[str]
    caps: SnapshotCaps
    bytes_left: int | None
    started_ns: int = field(default_factory=time.time_ns)
    kept: int = 0  # files counted against caps.files
    added: int = 0  # bytes added to the store, read-only data included
    omitted: list[tuple[str, str]] = field(default_factory=list)
    cache: dict[_StatKey, str] = field(default_factory=dict)  # this snapshot's cacheable digests
    waited: bool = False
    inside_links: dict[tuple[int, int], int] | None = None

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
            for _rel, _fd, _name, found in _walk(self.top, self.skip, set()):
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
        if self.bytes_left is not None:
            self.bytes_left = max(0, self.bytes_left - added)

    def cacheable(self, changed_ns: int) -> bool:
        """Whether a digest read from now on may be cached for a file stamped ``changed_ns``
        (see the module docstring); waits out the racy window at most once per snapshot."""
        window = _COARSE_WINDOW_NS if changed_ns % _SECOND == 0 else RACY_WINDOW_NS
        if changed_ns < time.time_ns() - window:
            return True
        if window != RACY_WINDOW_NS or changed_ns >= self.started_ns:
            return False  # seconds-only stamps, or changed while we walk: not worth a wait
        if not self.waited:
            self.waited = True
            delay = self.started_ns + window - time.time_ns()
            if delay > 0:
                time.sleep(delay / _SECOND)
        return changed_ns < time.time_ns() - window


# Digests of read-only data, shared by every store of the process: the same data files are
# linked into run after run, and hashing hundreds of MB again per run is the largest cost.
_data_digests: OrderedDict[_DataKey, str] = OrderedDict()
_data_lock = threading.Lock()


def _data_digest(key: _DataKey) -> str | None:
    with _data_lock:
        digest = _data_digests.get(key)
        if digest is not None:
            _data_digests.move_to_end(key)
        return digest


def _remember_data_digest(key: _DataKey, digest: str) -> None:
    with _data_lock:
        _data_digests[key] = digest
        _data_digests.move_to_end(key)
        while len(_data_digests) > DATA_CACHE_SIZE:
            _data_digests.popitem(last=False)


class SnapshotStore:
    """A deduplicating store of workspace snapshots under ``root``.

    ``fsync=False`` skips the one sync per snapshot (readers, and tests that do not need
    durability).
    """

    def __init__(self, root: Path | str, *, fsync: bool = True) -> None:
        self.root = Path(root)
        self._blobs = self.root / "blobs"
        self._manifests = self.root / "manifests"
        self._fsync = fsync
        self._blobs.mkdir(parents=True, exist_ok=True)
        self._manifests.mkdir(parents=True, exist_ok=True)
        self._cache: dict[_StatKey, str] = {}
        self._known: set[str] = set()  # digests whose blobs this instance stored or checked
        self._subdirs: set[str] = set()  # blob folders known to exist
        self._durable: set[str] = set()  # snapshot ids this instance has synced
        self._run_bytes = 0  # bytes this instance added, read-only data excluded
        self._renames = 0  # blobs and manifests this instance put in place
        self._previous: tuple[str, dict[str, Any], int] | None = None  # id, files, chain length
        self._read_cache: OrderedDict[str, dict[str, Any]] = OrderedDict()  # manifests read back

    # ------------------------------------------------------------------ snapshot

    def snapshot(self, workspace: Path | str, *, link_paths: Collection[str] = (),
                 caps: SnapshotCaps = SnapshotCaps()) -> Snapshot:
        """Store the current state of ``workspace`` and describe it, within ``caps``."""
        links = _normalize_link_paths(link_paths)
        top = os.path.realpath(workspace)  # fwalk yields nothing for a top that is a link
        if not os.path.isdir(top):
            raise TraceError(f"cannot snapshot {workspace}: it is not a directory")
        left = None if caps.run_bytes is None else max(0, caps.run_bytes - self._run_bytes)
        scan = _Scan(top, _dev_ino(self.root), links, caps, left)
        files: dict[str, dict[str, Any]] = {}
        dirs: set[str] = set()
        renames = self._renames
        try:
            self._scan(scan, files, dirs)
            snapshot_id, manifest_added = self._write_manifest(files, _empty_dirs(dirs, files))
            self._make_durable(snapshot_id, wrote=self._renames > renames)
        except OSError as exc:
            raise TraceError(f"cannot snapshot {workspace}: {exc}") from exc
        self._cache = scan.cache  # only this step's files: the cache cannot grow without bound
        self._run_bytes += manifest_added
        total = sum(entry.get("size", 0) for entry in files.values())
        return Snapshot(snapshot_id, len(files), total, scan.added + manifest_added, tuple(scan.omitted))

    def _scan(self, scan: _Scan, files: dict[str, dict[str, Any]], dirs: set[str]) -> None:
        """Fill ``files`` and ``dirs`` from the workspace, storing new content as it goes."""
        for rel, dir_fd, name, st in _walk(scan.top, scan.skip, dirs):
            data = _wants_link(rel, scan.links)
            if not data and scan.caps.files is not None and scan.kept >= scan.caps.files:
                scan.omitted.append((rel, f"over the limit of {scan.caps.files:,} files in one snapshot"))
                continue
            if stat.S_ISLNK(st.st_mode):
                target = _readlink(name, dir_fd)
                if target is not None:
                    files[rel] = {"symlink": target}
                    scan.kept += not data
                continue
            entry = self._store_file(scan, rel, dir_fd, name, st, data)
            if entry is not None:
                files[rel] = entry
                scan.kept += not data

    def _store_file(self, scan: _Scan, rel: str, dir_fd: int, name: str, st: os.stat_result,
                    data: bool) -> dict[str, Any] | None:
        """Recall one regular file's digest from its stat, else read it once (hashing it while
        it is copied or linked into the store); None if it is left out."""
        reason = None if data else scan.refusal(st)
        if reason is not None:
            scan.omitted.append((rel, reason))
            return None
        digest = self._recall(scan, rel, st, data)
        if digest is not None:
            return {"sha256": digest, "size": st.st_size, "mode": _mode(st.st_mode)}
        fh = _open_regular(rel, name, dir_fd)
        if fh is None:
            return None
        with fh:
            st = os.fstat(fh.fileno())  # the file we read, whatever the name held at the listing
            reason = None if data else scan.refusal(st)
            if reason is not None:
                scan.omitted.append((rel, reason))
                return None
            stored = self._store_data(scan, fh, st, name, dir_fd) if data else self._store_own(scan, rel, fh, st)
            if stored is None:
                return None
        scan.added += stored.added
        if not data:
            scan.spend(stored.added)
            self._run_bytes += stored.added
        return {"sha256": stored.digest, "size": stored.size, "mode": _mode(st.st_mode)}

    def _recall(self, scan: _Scan, rel: str, st: os.stat_result, data: bool) -> str | None:
        """The digest of an unchanged file whose blob is stored, from its listing's stat alone."""
        if data:
            digest = _data_digest((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        else:
            key: _StatKey = (rel, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            digest = self._cache.get(key)
            if digest is not None:
                scan.cache[key] = digest
        if digest is None or not self._has_blob(digest, st.st_size):
            return None
        return digest

    def _store_own(self, scan: _Scan, rel: str, fh: BinaryIO, st: os.stat_result) -> _Stored | None:
        """A workspace file not recalled: copied into the store while it is hashed."""
        reason = scan.over_budget(st.st_size)
        if reason is not None:
            scan.omitted.append((rel, reason))
            return None
        cacheable = scan.cacheable(st.st_ctime_ns)
        stored = self._copy_blob(fh, scan.copy_limit())
        if stored is None:
            now = os.fstat(fh.fileno())
            scan.omitted.append((rel, scan.refusal(now) or scan.over_budget(max(now.st_size, st.st_size + 1))
                                 or "it grew past the snapshot limits while it was being saved"))
            return None
        if cacheable and _unchanged(fh, st) and stored.size == st.st_size:
            scan.cache[(rel, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)] = stored.digest
        return stored

    def _store_data(self, scan: _Scan, fh: BinaryIO, st: os.stat_result, name: str, dir_fd: int) -> _Stored:
        """Read-only data not recalled: hard-linked into the store and hashed through the link
        (one read), else copied while hashed; its digest is then shared with later stores."""
        key: _DataKey = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        known = _data_digest(key)  # hashed by an earlier store: link it in under that name
        cacheable = known is None and scan.cacheable(st.st_mtime_ns)
        stored = self._link_blob(fh, st, name, dir_fd, known)
        if stored is None:
            stored = self._copy_blob(fh, None)
            assert stored is not None  # no limit
        if cacheable and _unchanged(fh, st, ctime=False) and stored.size == st.st_size:
            _remember_data_digest(key, stored.digest)
        return stored

    def _has_blob(self, digest: str, size: int) -> bool:
        """Whether the blob is stored whole (a blob cut short by a power cut has the wrong size)."""
        if digest in self._known:
            return True
        try:
            if self._blob_path(digest).stat().st_size != size:
                return False
        except FileNotFoundError:
            return False
        self._known.add(digest)
        return True

    def _link_blob(self, fh: BinaryIO, st: os.stat_result, name: str, dir_fd: int,
                   digest: str | None) -> _Stored | None:
        """Hard-link the workspace file into the store, hashing it unless ``digest`` is known;
        None when it cannot be linked (another device, no hard links) or the name now holds
        another file."""
        tmp = self._blobs / f"{_TMP_PREFIX}{os.urandom(8).hex()}"
        try:
            os.link(name, tmp, src_dir_fd=dir_fd, follow_symlinks=False)
        except OSError:  # another device, no hard links here, too many links...
            return None
        try:
            if os.stat(tmp, follow_symlinks=False).st_ino != st.st_ino:
                return None
            if digest is None:
                fh.seek(0)
                digest = _hash_stream(fh)
            return self._place_new_blob(tmp, digest, st.st_size)
        finally:
            _unlink_quietly(tmp)

    def _copy_blob(self, fh: BinaryIO, limit: int | None) -> _Stored | None:
        """Copy ``fh`` into the store while hashing it; None if it holds more than ``limit`` bytes."""
        tmp = self._blobs / f"{_TMP_PREFIX}{os.urandom(8).hex()}"
        # read-only from birth: blobs may be hard-linked out, so discourage edits in place
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o444)
        try:
            with open(fd, "wb") as out:
                fh.seek(0)
                copied = _copy_hashing(fh, out, limit)
            if copied is None:
                return None
            return self._place_new_blob(tmp, *copied)
        finally:
            _unlink_quietly(tmp)

    def _place_new_blob(self, tmp: Path, digest: str, size: int) -> _Stored:
        """Rename a complete temp blob into place unless that content is stored already."""
        if self._has_blob(digest, size):
            return _Stored(digest, size, 0)
        final = self._blob_path(digest)
        if digest[:2] not in self._subdirs:
            final.parent.mkdir(exist_ok=True)
            self._subdirs.add(digest[:2])
        os.replace(tmp, final)
        self._renames += 1
        self._known.add(digest)
        return _Stored(digest, size, size)

    def _write_manifest(self, files: dict[str, dict[str, Any]], dirs: list[str]) -> tuple[str, int]:
        """Store the manifest under the hash of its canonical JSON; returns (id, bytes added)."""
        snapshot_id = hashlib.sha256(_canonical({"format": _FORMAT, "files": files, "dirs": dirs})).hexdigest()[:16]
        final = self._manifest_path(snapshot_id)
        if final.exists():
            self._remember(snapshot_id, files, self._chain_length(snapshot_id))
            return snapshot_id, 0
        stored, chain = self._stored_form(files, dirs)
        data = _canonical(stored)
        fd, tmp_name = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=self._manifests)
        try:
            with open(fd, "wb") as out:
                out.write(data)
            os.replace(tmp_name, final)
            self._renames += 1
        finally:
            _unlink_quietly(Path(tmp_name))
        self._remember(snapshot_id, files, chain)
        return snapshot_id, len(data)

    def _make_durable(self, snapshot_id: str, *, wrote: bool) -> None:
        """One sync for the whole snapshot, before its id is handed out (see the module docstring)."""
        if self._fsync and (wrote or snapshot_id not in self._durable):
            _sync_filesystem(self.root)
        self._durable.add(snapshot_id)

    def _stored_form(self, files: dict[str, dict[str, Any]], dirs: list[str]) -> tuple[dict[str, Any], int]:
        """A delta against the previous manifest while the chain is short, else the whole manifest."""
        if self._previous is None or self._previous[2] >= MAX_CHAIN:
            return {"format": _FORMAT, "files": files, "dirs": dirs}, 0
        base_id, base_files, chain = self._previous
        changed = {rel: entry for rel, entry in files.items() if base_files.get(rel) != entry}
        removed = sorted(rel for rel in base_files if rel not in files)
        return {"format": _FORMAT, "base": base_id, "set": changed, "unset": removed, "dirs": dirs}, chain + 1

    def _remember(self, snapshot_id: str, files: dict[str, dict[str, Any]], chain: int) -> None:
        self._previous = (snapshot_id, files, chain)

    def _chain_length(self, snapshot_id: str) -> int:
        """How many deltas lead to this stored manifest from a whole one."""
        length = 0
        stored = self._read_stored(snapshot_id)
        while "base" in stored:
            length += 1
            if length > MAX_CHAIN + 1:
                raise TraceError(f"snapshot manifest {snapshot_id} is corrupt: its delta chain does not end")
            stored = self._read_stored(stored["base"])
        return length

    def _read_stored(self, snapshot_id: str) -> dict[str, Any]:
        path = self._manifest_path(snapshot_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise TraceError(f"no snapshot {snapshot_id!r} in the store at {self.root}") from None
        try:
            stored = json.loads(data)
        except ValueError as exc:
            raise TraceError(f"snapshot manifest {path} is corrupt: {exc}") from None
        if not isinstance(stored, dict):
            raise TraceError(f"snapshot manifest {path} is corrupt: not an object")
        return stored

    # ------------------------------------------------------------------ reading

    def manifest(self, snapshot_id: str) -> dict[str, Any]:
        """The manifest of a stored snapshot: ``{"format", "files", "dirs"}``, deltas applied."""
        manifest = self._load(snapshot_id)
        return {"format": manifest["format"], "files": dict(manifest["files"]), "dirs": list(manifest["dirs"])}

    def _load(self, snapshot_id: str, depth: int = 0) -> dict[str, Any]:
        """A checked manifest, shared with the read cache (callers must not change it). A delta
        whose base is cached costs one copy of the base plus a check of its own entries."""
        cached = self._read_cache.get(snapshot_id)
        if cached is not None:
            self._read_cache.move_to_end(snapshot_id)
            return cached
        if depth > MAX_CHAIN + 1:
            raise TraceError(f"snapshot manifest {snapshot_id} is corrupt: its delta chain does not end")
        stored = self._read_stored(snapshot_id)
        if "base" in stored:
            if not isinstance(stored.get("set"), dict) or not isinstance(stored.get("unset"), list):
                raise TraceError(f"snapshot manifest {snapshot_id} is corrupt: a delta lacks 'set' or 'unset'")
            base = self._load(stored["base"], depth + 1)
            files = dict(base["files"])
            for rel in stored["unset"]:
                files.pop(rel, None)
            files.update(stored["set"])
            manifest = {"format": stored.get("format"), "files": files, "dirs": stored.get("dirs")}
            manifest["folders"] = _check_delta(snapshot_id, manifest, base, stored["set"])
        else:
            manifest = {"format": stored.get("format"), "files": stored.get("files"), "dirs": stored.get("dirs")}
            manifest["folders"] = _check_manifest(snapshot_id, manifest)
        if len(self._read_cache) >= 8:
            self._read_cache.popitem(last=False)
        self._read_cache[snapshot_id] = manifest
        return manifest

    def materialize(self, snapshot_id: str, dest: Path | str, *, link: bool = True) -> None:
        """Recreate a snapshot's tree in ``dest`` (which must be absent or empty).

        With ``link`` files are hard links into the store where possible: cheap, but they must
        be treated as read-only, since editing one in place would change the stored blob.
        Copies get the recorded exec bit. Symlinks come back as symlinks.
        """
        self._materialize(snapshot_id, dest, lambda rel: link, symlinks=True)

    def materialize_regular(self, snapshot_id: str, dest: Path | str, *,
                            link_paths: Collection[str] = ()) -> list[str]:
        """Recreate a snapshot for grading or measuring: regular files only.

        Symlinks are left out (returned, so callers can say why a file is missing): a grader
        must never follow a link the agent made. Files under ``link_paths`` (read-only data)
        are hard links into the store, everything else is a private copy the reader may change.
        """
        links = _normalize_link_paths(link_paths)
        return self._materialize(snapshot_id, dest, lambda rel: _wants_link(rel, links), symlinks=False)

    def _materialize(self, snapshot_id: str, dest: Path | str, link_for: Callable[[str], bool], *,
                     symlinks: bool) -> list[str]:
        """Returns the symlinks left out (none when ``symlinks`` is true). Each directory is
        created once; nothing is synced (the copy is scratch, the store is the record)."""
        skipped: list[str] = []
        manifest = self._load(snapshot_id)
        dest = Path(dest)
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise TraceError(
                f"cannot materialize snapshot {snapshot_id} into {dest}: "
                "it exists and is not an empty directory"
            )
        dest.mkdir(parents=True, exist_ok=True)
        made: set[str] = {""}
        for rel in manifest["dirs"]:
            _make_parents(dest, rel + "/", made)
        for rel, entry in sorted(manifest["files"].items()):
            _make_parents(dest, rel, made)
            target = dest / rel
            if "symlink" in entry:
                if symlinks:
                    os.symlink(entry["symlink"], target)
                else:
                    skipped.append(rel)
            else:
                self._place_blob(snapshot_id, rel, entry, target, link_for(rel))
        return skipped

    def _place_blob(
        self, snapshot_id: str, rel: str, entry: dict[str, Any], target: Path, link: bool
    ) -> None:
        """Put a file at ``target``: a hard link if allowed and the modes agree, else a copy."""
        blob = self._blob_path(entry["sha256"])
        try:
            if link and _mode(blob.stat().st_mode) == entry["mode"]:
                try:
                    os.link(blob, target)
                    return
                except OSError:
                    pass  # another device or no hard links: copy instead
            shutil.copyfile(blob, target)
        except FileNotFoundError:
            if blob.exists():
                raise
            raise TraceError(
                f"snapshot store {self.root} is corrupt: blob {entry['sha256']} "
                f"for {rel!r} of snapshot {snapshot_id} is missing"
            ) from None
        os.chmod(target, entry["mode"])

    def file_entry(self, snapshot_id: str, rel: str) -> dict[str, Any] | None:
        """One path's manifest entry (a copy), without copying the whole manifest."""
        entry = self._load(snapshot_id)["files"].get(rel)
        return None if entry is None else dict(entry)

    def read_file(self, snapshot_id: str, rel: str) -> bytes | None:
        """One regular file's content in a snapshot; None for a symlink or a path it lacks."""
        entry = self._load(snapshot_id)["files"].get(rel)
        if entry is None or "symlink" in entry:
            return None
        return self._blob_path(entry["sha256"]).read_bytes()

    def diff(self, old_id: str, new_id: str) -> dict[str, list[str]]:
        """Paths added, removed and changed (content, mode or link target) between two snapshots."""
        old = self._load(old_id)["files"]
        new = self._load(new_id)["files"]
        return {
            "added": sorted(new.keys() - old.keys()),
            "removed": sorted(old.keys() - new.keys()),
            "changed": sorted(p for p in old.keys() & new.keys() if old[p] != new[p]),
        }

    def stored_bytes(self) -> int:
        """Size of all blobs and manifests, each inode counted once (temp files excluded)."""
        seen: set[tuple[int, int]] = set()
        total = 0
        for folder in (self._blobs, self._manifests):
            for path in _store_files(folder):
                st = path.stat(follow_symlinks=False)
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size
        return total

    # ------------------------------------------------------------------ paths

    def _blob_path(self, digest: str) -> Path:
        return self._blobs / digest[:2] / digest

    def _manifest_path(self, snapshot_id: str) -> Path:
        if not isinstance(snapshot_id, str) or not _ID_RE.fullmatch(snapshot_id):
            raise TraceError(f"{snapshot_id!r} is not a snapshot id (16 lowercase hex digits)")
        return self._manifests / f"{snapshot_id}.json"


def human_size(size: int) -> str:
    """``5.0 GiB``, ``4 GiB``, ``312 KiB``, ``17 bytes``: sizes as the agent and the user read them."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f}".removesuffix(".0") + f" {unit}"
    return f"{size} byte" + ("" if size == 1 else "s")


# ---------------------------------------------------------------------- walking


_Found = tuple[str, int, str, os.stat_result]  # relative path, dir fd, name, lstat


def _walk(top: str, skip: tuple[int, int] | None, dirs: set[str]) -> Iterator[_Found]:
    """Yield ``(relative path, dir fd, name, lstat)`` for each symlink and regular file.

    Directories are descended without following links (``os.fwalk``), each directory's entries
    by name, its files before its subdirectories' contents; every directory seen is added to
    ``dirs``. Other file types (fifos, sockets, devices) are skipped; entries that vanish
    mid-walk are skipped; unreadable directories raise.
    """
    for dirpath, dirnames, filenames, dir_fd in os.fwalk(top, onerror=_walk_error):
        prefix = "" if dirpath == top else dirpath[len(top) :].lstrip(os.sep) + "/"
        keep: list[str] = []
        for name in sorted(dirnames + filenames):
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if (st.st_dev, st.st_ino) != skip:
                    keep.append(name)
                    dirs.add(prefix + name)
            elif stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode):
                yield prefix + name, dir_fd, name, st
        dirnames[:] = keep


def _walk_error(exc: OSError) -> None:
    """fwalk's error hook: a vanished directory is fine, an unreadable one is not."""
    if isinstance(exc, FileNotFoundError):
        return
    raise TraceError(f"cannot snapshot {exc.filename}: {exc.strerror or exc}") from exc


def _open_regular(rel: str, name: str, dir_fd: int) -> BinaryIO | None:
    """Open a file without following a link; None if it vanished or is no longer a regular file."""
    try:
        fd = os.open(name, _OPEN_FLAGS, dir_fd=dir_fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return None  # swapped for a link since we listed it; the next snapshot sees the link
        raise TraceError(f"cannot snapshot {rel}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return open(fd, "rb")


def _unchanged(fh: BinaryIO, before: os.stat_result, *, ctime: bool = True) -> bool:
    """Whether the open file still has the stat it had before it was read (read-only data is
    compared without its ctime, which linking it into the store changes)."""
    after = os.fstat(fh.fileno())
    return (after.st_size, after.st_mtime_ns, after.st_ctime_ns if ctime else 0) == (
        before.st_size, before.st_mtime_ns, before.st_ctime_ns if ctime else 0)


def _readlink(name: str, dir_fd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None  # vanished or replaced since we listed it


def _dev_ino(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _empty_dirs(dirs: set[str], files: dict[str, Any]) -> list[str]:
    """Directories with nothing recorded below them (the others are recreated implicitly)."""
    ancestors: set[str] = set()
    for path in (*files, *dirs):
        parent = path.rpartition("/")[0]
        while parent and parent not in ancestors:
            ancestors.add(parent)
            parent = parent.rpartition("/")[0]
    return sorted(dirs - ancestors)


def _make_parents(dest: Path, rel: str, made: set[str]) -> None:
    """Create the folders above ``rel`` in ``dest`` unless this materialisation already did."""
    parent = rel.rpartition("/")[0]
    if parent not in made:
        (dest / parent).mkdir(parents=True, exist_ok=True)
        while parent not in made:
            made.add(parent)
            parent = parent.rpartition("/")[0]


def _normalize_link_paths(link_paths: Collection[str]) -> frozenset[str]:
    """Relative POSIX paths; a directory in the set covers every file below it."""
    if isinstance(link_paths, (str, bytes)):
        raise TypeError("link_paths must be a collection of paths, not a single string")
    return frozenset(
        PurePosixPath(os.fspath(p).replace(os.sep, "/")).as_posix() for p in link_paths
    )


def _wants_link(rel: str, links: frozenset[str]) -> bool:
    if not links:
        return False
    path = rel
    while path:
        if path in links:
            return True
        path = path.rpartition("/")[0]
    return False


# ---------------------------------------------------------------------- content


def _hash_stream(fh: BinaryIO) -> str:
    """sha256 of everything left in ``fh``."""
    digest = _new_hasher()
    for chunk in iter(lambda: fh.read(_CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _copy_hashing(src: BinaryIO, out: BinaryIO, limit: int | None = None) -> tuple[str, int] | None:
    """Copy ``src`` to ``out``; the sha256 and size of exactly what was copied, or None as soon
    as it exceeds ``limit`` bytes."""
    digest = _new_hasher()
    size = 0
    for chunk in iter(lambda: src.read(_CHUNK), b""):
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        digest.update(chunk)
        out.write(chunk)
    return digest.hexdigest(), size


def _mode(st_mode: int) -> int:
    """Only the exec bit matters: 0o755 or 0o644."""
    return 0o755 if st_mode & 0o111 else 0o644


def _canonical(value: Any) -> bytes:
    # ensure_ascii keeps undecodable file names (surrogate escapes) representable
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii")


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _store_files(folder: Path) -> Iterator[Path]:
    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            if not name.startswith(_TMP_PREFIX):
                yield Path(dirpath, name)


_libc_syncfs: Any = None


def _sync_filesystem(path: Path) -> None:
    """Make everything written on ``path``'s file system durable: ``syncfs``, else ``sync``."""
    global _libc_syncfs
    if _libc_syncfs is None:
        try:
            _libc_syncfs = ctypes.CDLL(None, use_errno=True).syncfs
        except (AttributeError, OSError):
            _libc_syncfs = False
    if _libc_syncfs:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        try:
            if _libc_syncfs(fd) == 0:
                return
        finally:
            os.close(fd)
    os.sync()


# ---------------------------------------------------------------------- validation


def _check_manifest(snapshot_id: str, manifest: Any) -> set[str]:
    """Refuse a manifest that could write outside ``dest`` or name a blob outside the store;
    returns the folders its files lie in, for checking the deltas built on it."""
    bad = _corrupt(snapshot_id)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise bad("no 'files' mapping")
    _check_dirs(manifest, bad)
    files: dict[str, Any] = manifest["files"]
    folders: set[str] = set()
    for rel, entry in files.items():
        _check_file(rel, entry, files, folders, bad)
    return folders


def _check_delta(snapshot_id: str, manifest: dict[str, Any], base: dict[str, Any], changed: dict[str, Any]) -> set[str]:
    """The same check for a delta applied to a checked base, at the cost of the delta's own
    entries: only a path the delta sets can break the rules. A path that was a folder in the
    base (it may still hold files) gets the whole check."""
    bad = _corrupt(snapshot_id)
    _check_dirs(manifest, bad)
    files: dict[str, Any] = manifest["files"]
    if any(rel in base["folders"] and rel not in base["files"] for rel in changed):
        return _check_manifest(snapshot_id, manifest)
    folders = set(base["folders"])  # may keep folders the delta emptied: that only adds caution
    for rel, entry in changed.items():
        _check_file(rel, entry, files, folders, bad)
    return folders


def _check_file(rel: Any, entry: Any, files: dict[str, Any], folders: set[str], bad: Callable[[str], TraceError]) -> None:
    """One entry: a safe path, a valid entry, and no file or link above it."""
    if not _safe_relpath(rel):
        raise bad(f"unsafe path {rel!r}")
    _check_entry(rel, entry, bad)
    parent = rel.rpartition("/")[0]
    while parent and parent not in folders:
        if parent in files:
            raise bad(f"{rel!r} lies below the file or link {parent!r}")
        folders.add(parent)
        parent = parent.rpartition("/")[0]
    if parent and parent in files:
        raise bad(f"{rel!r} lies below the file or link {parent!r}")


def _check_dirs(manifest: dict[str, Any], bad: Callable[[str], TraceError]) -> None:
    if not isinstance(manifest.get("dirs"), list):
        raise bad("no 'dirs' list")
    for rel in manifest["dirs"]:
        if not _safe_relpath(rel):
            raise bad(f"unsafe path {rel!r}")


def _corrupt(snapshot_id: str) -> Callable[[str], TraceError]:
    return lambda why: TraceError(f"snapshot manifest {snapshot_id} is corrupt: {why}")


def _check_entry(rel: str, entry: Any, bad: Any) -> None:
    if not isinstance(entry, dict):
        raise bad(f"entry for {rel!r} is not an object")
    if "symlink" in entry:
        if not isinstance(entry["symlink"], str):
            raise bad(f"link target of {rel!r} is not a string")
        return
    if not isinstance(entry.get("sha256"), str) or not _SHA_RE.fullmatch(entry["sha256"]):
        raise bad(f"entry for {rel!r} has no valid sha256")
    if entry.get("mode") not in (0o644, 0o755):
        raise bad(f"entry for {rel!r} has mode {entry.get('mode')!r}")


def _safe_relpath(rel: Any) -> bool:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\0" in rel:
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))

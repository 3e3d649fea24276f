"""Content-addressed workspace snapshots: each step stores only what changed.

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

Safety and cost:

* The walk never follows a symlink: it holds a directory fd at each level (``os.fwalk``) and
  opens files with ``O_NOFOLLOW``, so even a link swapped in mid-walk cannot make us copy what
  it points to (it may point at secrets).
* Blobs and manifests are written to a temp file and ``os.replace``-d into place (and fsynced
  unless ``fsync=False``), so a crash or a concurrent writer never leaves a partial blob.
* Unchanged files are not re-read: a per-store cache maps (path, device, inode, size, mtime)
  to the digest. As in git's "racy clean" rule, a file modified less than ``racy_window_ns``
  before the snapshot began is not cached, because a later same-size edit within the same
  timestamp tick would otherwise go unnoticed.
* Paths in ``link_paths`` (large read-only data) are hard-linked into the store, costing no
  space. The blob then shares the workspace file's inode: editing that file in place would also
  change the stored blob, which is why this is only for data the agent must not modify.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from pytest_mlab.errors import TraceError

_FORMAT = 1
MAX_CHAIN = 32  # deltas between two whole manifests
_CHUNK = 1 << 20
_TMP_PREFIX = ".tmp-"
_ID_RE = re.compile(r"[0-9a-f]{16}")
_SHA_RE = re.compile(r"[0-9a-f]{64}")
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)

_CacheKey = tuple[str, int, int, int, int]  # path, st_dev, st_ino, st_size, st_mtime_ns


@dataclass(frozen=True)
class Snapshot:
    """One stored workspace state.

    ``files`` counts regular files and symlinks, ``bytes`` is the total size of the regular
    files, ``new_bytes`` what this call added to the store (new blobs, linked or copied, plus a
    new manifest); it is 0 when nothing changed since a stored state.
    """

    id: str
    files: int
    bytes: int
    new_bytes: int


@dataclass(frozen=True)
class _Stored:
    """Where a file's content ended up: its digest, its size, and the bytes newly stored."""

    digest: str
    size: int
    added: int


class SnapshotStore:
    """A deduplicating store of workspace snapshots under ``root``."""

    racy_window_ns: int = 1_000_000_000

    def __init__(self, root: Path | str, *, fsync: bool = True) -> None:
        self.root = Path(root)
        self._blobs = self.root / "blobs"
        self._manifests = self.root / "manifests"
        self._fsync = fsync
        self._blobs.mkdir(parents=True, exist_ok=True)
        self._manifests.mkdir(parents=True, exist_ok=True)
        self._cache: dict[_CacheKey, str] = {}
        self._known: set[str] = set()  # digests seen in the store by this instance
        self._previous: tuple[str, dict[str, Any], int] | None = None  # id, files, chain length
        self._read_cache: dict[str, dict[str, Any]] = {}  # the last manifests read back

    # ------------------------------------------------------------------ snapshot

    def snapshot(self, workspace: Path | str, *, link_paths: Collection[str] = ()) -> Snapshot:
        """Store the current state of ``workspace`` and describe it."""
        links = _normalize_link_paths(link_paths)
        top = os.path.realpath(workspace)  # fwalk yields nothing for a top that is a link
        if not os.path.isdir(top):
            raise TraceError(f"cannot snapshot {workspace}: it is not a directory")
        files: dict[str, dict[str, Any]] = {}
        dirs: set[str] = set()
        try:
            added = self._scan(top, links, files, dirs)
            snapshot_id, manifest_added = self._write_manifest(files, _empty_dirs(dirs, files))
        except OSError as exc:
            raise TraceError(f"cannot snapshot {workspace}: {exc}") from exc
        total = sum(entry.get("size", 0) for entry in files.values())
        return Snapshot(snapshot_id, len(files), total, added + manifest_added)

    def _scan(
        self, top: str, links: frozenset[str], files: dict[str, dict[str, Any]], dirs: set[str]
    ) -> int:
        """Fill ``files`` and ``dirs`` from the workspace; returns the blob bytes added."""
        start_ns = time.time_ns()
        fresh: dict[_CacheKey, str] = {}
        added = 0
        for rel, dir_fd, name, st in _walk(top, _dev_ino(self.root), dirs):
            if stat.S_ISLNK(st.st_mode):
                target = _readlink(name, dir_fd)
                if target is not None:
                    files[rel] = {"symlink": target}
                continue
            result = self._store_file(rel, dir_fd, name, _wants_link(rel, links), start_ns, fresh)
            if result is not None:
                files[rel], new = result
                added += new
        self._cache = fresh  # only this step's files: the cache cannot grow without bound
        return added

    def _store_file(
        self,
        rel: str,
        dir_fd: int,
        name: str,
        link: bool,
        start_ns: int,
        fresh: dict[_CacheKey, str],
    ) -> tuple[dict[str, Any], int] | None:
        """Hash (or recall) one regular file and make sure its blob is stored."""
        fh = _open_regular(rel, name, dir_fd)
        if fh is None:
            return None
        with fh:
            st = os.fstat(fh.fileno())
            key: _CacheKey = (rel, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            digest = self._cache.get(key)
            if digest is None:
                digest = _hash_stream(fh)
                if self._may_cache(fh, st, start_ns):
                    fresh[key] = digest
            else:
                fresh[key] = digest
            stored = self._ensure_blob(fh, st, digest, name, dir_fd, link)
        if stored.digest != digest:  # the file changed while we read it: trust the copy
            fresh.pop(key, None)
        entry = {"sha256": stored.digest, "size": stored.size, "mode": _mode(st.st_mode)}
        return entry, stored.added

    def _may_cache(self, fh: BinaryIO, before: os.stat_result, start_ns: int) -> bool:
        """Whether a digest may be reused while the file's stat stays the same."""
        if before.st_mtime_ns >= start_ns - self.racy_window_ns:
            return False
        after = os.fstat(fh.fileno())
        return (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    def _ensure_blob(
        self, fh: BinaryIO, st: os.stat_result, digest: str, name: str, dir_fd: int, link: bool
    ) -> _Stored:
        """Store the content of ``fh`` under ``digest`` unless it is stored already."""
        if digest in self._known or self._blob_path(digest).exists():
            self._known.add(digest)
            return _Stored(digest, st.st_size, 0)
        if link and self._link_blob(name, dir_fd, st, digest):
            self._known.add(digest)
            return _Stored(digest, st.st_size, st.st_size)
        fh.seek(0)
        stored = self._copy_blob(fh, digest)
        self._known.add(stored.digest)
        return stored

    def _link_blob(self, name: str, dir_fd: int, st: os.stat_result, digest: str) -> bool:
        """Hard-link the workspace file as the blob; False when the filesystem will not."""
        final = self._blob_path(digest)
        final.parent.mkdir(exist_ok=True)
        tmp = final.parent / f"{_TMP_PREFIX}{os.urandom(8).hex()}"
        try:
            os.link(name, tmp, src_dir_fd=dir_fd, follow_symlinks=False)
        except OSError:  # another device, no hard links here, too many links...
            return False
        try:
            linked = os.stat(tmp, follow_symlinks=False)
            same = (linked.st_ino, linked.st_size, linked.st_mtime_ns) == (
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
            )
            if same:
                os.replace(tmp, final)
                return True
        finally:
            _unlink_quietly(tmp)
        return False

    def _copy_blob(self, fh: BinaryIO, expected: str) -> _Stored:
        """Copy ``fh`` into the store, hashing what is actually copied."""
        subdir = self._blob_path(expected).parent
        subdir.mkdir(exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=subdir)
        tmp = Path(tmp_name)
        try:
            with open(fd, "wb") as out:
                digest, size = _copy_hashing(fh, out)
                self._sync(out)
            os.chmod(tmp, 0o444)  # blobs may be hard-linked out; discourage edits in place
            final = self._blob_path(digest)
            if final.exists():
                return _Stored(digest, size, 0)
            final.parent.mkdir(exist_ok=True)
            os.replace(tmp, final)
            return _Stored(digest, size, size)
        finally:
            _unlink_quietly(tmp)

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
                self._sync(out)
            os.replace(tmp_name, final)
        finally:
            _unlink_quietly(Path(tmp_name))
        self._remember(snapshot_id, files, chain)
        return snapshot_id, len(data)

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

    def _sync(self, out: BinaryIO) -> None:
        """Force a new blob or manifest to disk so a power cut cannot leave it empty."""
        out.flush()
        if self._fsync:
            os.fsync(out.fileno())

    # ------------------------------------------------------------------ reading

    def manifest(self, snapshot_id: str) -> dict[str, Any]:
        """The manifest of a stored snapshot: ``{"format", "files", "dirs"}``, deltas applied."""
        if snapshot_id in self._read_cache:
            cached = self._read_cache[snapshot_id]
            return {"format": cached["format"], "files": dict(cached["files"]), "dirs": list(cached["dirs"])}
        chain = [self._read_stored(snapshot_id)]
        while "base" in chain[-1]:
            if len(chain) > MAX_CHAIN + 1:
                raise TraceError(f"snapshot manifest {snapshot_id} is corrupt: its delta chain does not end")
            chain.append(self._read_stored(chain[-1]["base"]))
        files = dict(chain[-1].get("files") or {})
        for delta in reversed(chain[:-1]):
            if not isinstance(delta.get("set"), dict) or not isinstance(delta.get("unset"), list):
                raise TraceError(f"snapshot manifest {snapshot_id} is corrupt: a delta lacks 'set' or 'unset'")
            for rel in delta["unset"]:
                files.pop(rel, None)
            files.update(delta["set"])
        manifest = {"format": chain[0].get("format"), "files": files, "dirs": chain[0].get("dirs")}
        _check_manifest(snapshot_id, manifest)
        if len(self._read_cache) >= 8:
            self._read_cache.pop(next(iter(self._read_cache)))
        self._read_cache[snapshot_id] = manifest
        return {"format": manifest["format"], "files": dict(files), "dirs": list(manifest["dirs"])}

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

    def _materialize(self, snapshot_id: str, dest: Path | str, link_for, *, symlinks: bool) -> list[str]:
        """Returns the symlinks left out (none when ``symlinks`` is true)."""
        skipped: list[str] = []
        manifest = self.manifest(snapshot_id)
        dest = Path(dest)
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            raise TraceError(
                f"cannot materialize snapshot {snapshot_id} into {dest}: "
                "it exists and is not an empty directory"
            )
        dest.mkdir(parents=True, exist_ok=True)
        for rel in manifest["dirs"]:
            (dest / rel).mkdir(parents=True, exist_ok=True)
        for rel, entry in sorted(manifest["files"].items()):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
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
            blob_mode = blob.stat().st_mode
        except FileNotFoundError:
            raise TraceError(
                f"snapshot store {self.root} is corrupt: blob {entry['sha256']} "
                f"for {rel!r} of snapshot {snapshot_id} is missing"
            ) from None
        if link and _mode(blob_mode) == entry["mode"]:
            try:
                os.link(blob, target)
                return
            except OSError:
                pass  # another device or no hard links: copy instead
        shutil.copyfile(blob, target)
        os.chmod(target, entry["mode"])

    def read_file(self, snapshot_id: str, rel: str) -> bytes | None:
        """One regular file's content in a snapshot; None for a symlink or a path it lacks."""
        entry = self.manifest(snapshot_id)["files"].get(rel)
        if entry is None or "symlink" in entry:
            return None
        return self._blob_path(entry["sha256"]).read_bytes()

    def diff(self, old_id: str, new_id: str) -> dict[str, list[str]]:
        """Paths added, removed and changed (content, mode or link target) between two snapshots."""
        old = self.manifest(old_id)["files"]
        new = self.manifest(new_id)["files"]
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


# ---------------------------------------------------------------------- walking


_Found = tuple[str, int, str, os.stat_result]  # relative path, dir fd, name, lstat


def _walk(top: str, skip: tuple[int, int] | None, dirs: set[str]) -> Iterator[_Found]:
    """Yield ``(relative path, dir fd, name, lstat)`` for each symlink and regular file.

    Directories are descended without following links (``os.fwalk``), sorted for determinism;
    every directory seen is added to ``dirs``. Other file types (fifos, sockets, devices) are
    skipped; entries that vanish mid-walk are skipped; unreadable directories raise.
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
    digest = hashlib.sha256()
    for chunk in iter(lambda: fh.read(_CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _copy_hashing(src: BinaryIO, out: BinaryIO) -> tuple[str, int]:
    """Copy ``src`` to ``out``; returns the sha256 and size of exactly what was copied."""
    digest = hashlib.sha256()
    size = 0
    for chunk in iter(lambda: src.read(_CHUNK), b""):
        digest.update(chunk)
        out.write(chunk)
        size += len(chunk)
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


# ---------------------------------------------------------------------- validation


def _check_manifest(snapshot_id: str, manifest: Any) -> None:
    """Refuse a manifest that could write outside ``dest`` or name a blob outside the store."""

    def bad(why: str) -> TraceError:
        return TraceError(f"snapshot manifest {snapshot_id} is corrupt: {why}")

    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise bad("no 'files' mapping")
    if not isinstance(manifest.get("dirs"), list):
        raise bad("no 'dirs' list")
    files: dict[str, Any] = manifest["files"]
    for rel in (*files, *manifest["dirs"]):
        if not _safe_relpath(rel):
            raise bad(f"unsafe path {rel!r}")
    for rel, entry in files.items():
        _check_entry(rel, entry, bad)
        parent = rel.rpartition("/")[0]
        while parent:
            if parent in files:
                raise bad(f"{rel!r} lies below the file or link {parent!r}")
            parent = parent.rpartition("/")[0]


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

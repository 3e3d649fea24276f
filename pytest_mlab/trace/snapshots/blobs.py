"""The content-addressed blob store: ``blobs/<sha256[:2]>/<sha256>``, one file per distinct content.

Each byte is read once: a file with no known digest is copied into a temp blob while it is
hashed; read-only data is hard-linked into the store and hashed through the same inode. Linking
costs no space, but the blob then shares the workspace file's inode: editing that file in place
would also change the stored blob, which is why it is only for data the agent must not modify.
Nothing is fsynced per blob (the store syncs once per snapshot); after a power cut a blob may be
cut short, so one is reused only if its size is right.
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Callable

from pytest_mlab.errors import TraceError
from pytest_mlab.trace.snapshots.disk import temp_path, unlink_quietly

_CHUNK = 1 << 20

_new_hasher = hashlib.sha256  # the one hash of file content (tests count what it reads)


@dataclass(frozen=True)
class StoredBlob:
    """Where a file's content ended up: its digest, its size, and the bytes newly stored."""

    digest: str
    size: int
    added: int


class BlobStore:
    """The blobs of the snapshot store at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / "blobs"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.renames = 0  # blobs this instance put in place
        self._known: set[str] = set()  # digests whose blobs this instance stored or checked
        self._subdirs: set[str] = set()  # blob folders known to exist

    def path(self, digest: str) -> Path:
        return self.folder / digest[:2] / digest

    def missing(self, digest: str, rel: str, snapshot_id: str) -> TraceError:
        """The error for a blob a manifest names but the store lacks (lost in a power cut, say)."""
        return _corrupt(self.root, digest, rel, snapshot_id, "is missing")

    def cut_short(self, digest: str, rel: str, snapshot_id: str) -> TraceError:
        """The error for a blob whose size is not the manifest's (cut short by a power cut, say)."""
        return _corrupt(self.root, digest, rel, snapshot_id, "does not have the size its manifest records")

    def has(self, digest: str, size: int) -> bool:
        """Whether the blob is stored whole (a blob cut short by a power cut has the wrong size)."""
        if digest in self._known:
            return True
        try:
            if self.path(digest).stat().st_size != size:
                return False
        except FileNotFoundError:
            return False
        self._known.add(digest)
        return True

    def link_in(self, fh: BinaryIO, st: os.stat_result, name: str, dir_fd: int | None,
                digest: str | None) -> StoredBlob | None:
        """Hard-link the workspace file into the store, hashing it unless ``digest`` is known;
        None when it cannot be linked (another device, no hard links) or the name now holds
        another file (another inode than ``st``'s)."""
        tmp = temp_path(self.folder)
        try:
            os.link(name, tmp, src_dir_fd=dir_fd, follow_symlinks=False)
        except OSError:  # another device, no hard links here, too many links...
            return None
        try:
            if os.stat(tmp, follow_symlinks=False).st_ino != st.st_ino:
                return None
            if digest is None:
                fh.seek(0)
                digest = hash_stream(fh)
            return self._place_new(tmp, digest, st.st_size)
        finally:
            unlink_quietly(tmp)

    def copy_in(self, fh: BinaryIO, limit: int | None) -> StoredBlob | None:
        """Copy ``fh`` into the store while hashing it; None if it holds more than ``limit`` bytes."""
        tmp = temp_path(self.folder)
        # read-only from birth: blobs may be hard-linked out, so discourage edits in place
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o444)
        try:
            with open(fd, "wb") as out:
                fh.seek(0)
                copied = _copy_hashing(fh, out, limit)
            if copied is None:
                return None
            return self._place_new(tmp, *copied)
        finally:
            unlink_quietly(tmp)

    def _place_new(self, tmp: Path, digest: str, size: int) -> StoredBlob:
        """Rename a complete temp blob into place unless that content is stored already."""
        if self.has(digest, size):
            return StoredBlob(digest, size, 0)
        final = self.path(digest)
        if digest[:2] not in self._subdirs:
            final.parent.mkdir(exist_ok=True)
            self._subdirs.add(digest[:2])
        os.replace(tmp, final)
        self.renames += 1
        self._known.add(digest)
        return StoredBlob(digest, size, size)


def _corrupt(root: Path, digest: str, rel: str, snapshot_id: str, what: str) -> TraceError:
    return TraceError(f"snapshot store {root} is corrupt: blob {digest} for {rel!r} of snapshot {snapshot_id} {what}")


def hash_stream(fh: BinaryIO) -> str:
    """sha256 of everything left in ``fh``."""
    digest = _new_hasher()
    for chunk in iter(lambda: fh.read(_CHUNK), b""):
        digest.update(chunk)
    return digest.hexdigest()


def _copy_hashing(src: BinaryIO, out: BinaryIO, limit: int | None = None) -> tuple[str, int] | None:
    """Copy ``src`` to ``out``; the sha256 and size of exactly what was copied, or None as soon
    as it exceeds ``limit`` bytes. A large file is hashed in a second thread while it is written
    (both release the GIL): a 50 MB checkpoint's snapshot then costs about the longer of the two,
    not their sum, which is most of what separated an Execute Script step from the original's."""
    digest = _new_hasher()
    try:
        large = os.fstat(src.fileno()).st_size >= _PIPELINE_FROM
    except (OSError, AttributeError, ValueError):
        large = False
    if not large:
        size = _copy_chunks(src, out, limit, digest.update)
        return None if size is None else (digest.hexdigest(), size)
    chunks: queue.Queue[bytes | None] = queue.Queue(maxsize=8)  # at most 8 MB in flight

    def hash_chunks() -> None:
        while (chunk := chunks.get()) is not None:
            digest.update(chunk)

    hasher = threading.Thread(target=hash_chunks, name="pytest-mlab-hash", daemon=True)
    hasher.start()
    try:
        size = _copy_chunks(src, out, limit, chunks.put)
    finally:
        chunks.put(None)
        hasher.join()
    return None if size is None else (digest.hexdigest(), size)


_PIPELINE_FROM = 8 * _CHUNK  # below this a thread costs more than it saves


def _copy_chunks(src: BinaryIO, out: BinaryIO, limit: int | None, hash_chunk: Callable[[bytes], Any]) -> int | None:
    """Copy ``src`` to ``out`` chunk by chunk, each handed to ``hash_chunk`` first; the bytes
    copied, or None as soon as they exceed ``limit``."""
    size = 0
    for chunk in iter(lambda: src.read(_CHUNK), b""):
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        hash_chunk(chunk)
        out.write(chunk)
    return size

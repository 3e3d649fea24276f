"""The content-addressed blob store: ``blobs/<digest[:2]>/<digest>``, one file per distinct content.

The digest is BLAKE3's (256 bits, in hex): on this work's typical input, a checkpoint of tens of
megabytes written by the step just run, it hashes several times faster than sha256, spread over
the cores; stores written before format 2 named blobs by sha256, and still read (manifests.py).
A file with no known digest is copied into a temp blob by the kernel, and the temp blob, which
nothing else can write, is hashed where it lies; read-only data is hard-linked into the store and hashed
through the same inode. Linking
costs no space, but the blob then shares the workspace file's inode: editing that file in place
would also change the stored blob, which is why it is only for data the agent must not modify.
Nothing is fsynced per blob (the store syncs once per snapshot); after a power cut a blob may be
cut short, so one is reused only if its size is right.
"""

from __future__ import annotations

import errno
import mmap
import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import blake3

from pytest_mlab.errors import TraceError
from pytest_mlab.trace.snapshots.disk import temp_path, unlink_quietly

_CHUNK = 1 << 20


DIGEST_KEY = "blake3"  # the key of a file's digest in a manifest entry
OLD_DIGEST_KEY = "sha256"  # its key in manifests of format 1, read still


def entry_digest(entry: dict[str, object]) -> str:
    """The blob name of a checked manifest entry of a regular file, whichever format wrote it."""
    return str(entry[DIGEST_KEY] if DIGEST_KEY in entry else entry[OLD_DIGEST_KEY])


def _new_hasher() -> blake3.blake3:
    """The one hash of file content (tests count what it is fed)."""
    return blake3.blake3(max_threads=blake3.blake3.AUTO)


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
                digest = hash_file(fh)
            return self._place_new(tmp, digest, st.st_size)
        finally:
            unlink_quietly(tmp)

    def copy_in(self, fh: BinaryIO, limit: int | None) -> StoredBlob | None:
        """Copy ``fh`` into the store and hash the copy; None if it holds more than ``limit`` bytes."""
        tmp = temp_path(self.folder)
        # read-only from birth: blobs may be hard-linked out, so discourage edits in place
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o444)
        try:
            with open(fd, "w+b") as out:
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


def hash_file(fh: BinaryIO) -> str:
    """The content digest of the whole file behind ``fh``, whatever its position. Read into one
    large buffer so that blake3 hashes each piece on every core; never mapped, since another
    process may truncate a workspace file while it is read (a mapped read would then kill the
    harness with SIGBUS, a read just ends early)."""
    digest = _new_hasher()
    buffer = bytearray(_HASH_CHUNK)
    view = memoryview(buffer)
    fd, offset = fh.fileno(), 0
    while True:
        got = os.preadv(fd, [buffer], offset)
        if not got:
            return digest.hexdigest()
        digest.update(view[:got])
        offset += got


def _copy_hashing(src: BinaryIO, out: BinaryIO, limit: int | None = None) -> tuple[str, int] | None:
    """Copy ``src`` from its start to ``out`` (a fresh temp blob); the digest and size of exactly
    what was copied, or None as soon as it exceeds ``limit`` bytes. The kernel copies (no bytes
    pass through this process); the copy, which nothing else can write, is hashed where it lies,
    each piece in a second thread as soon as the kernel has written it, so a large file's snapshot
    costs about the copy alone, what the original's snapshot spent on it."""
    out.flush()
    try:
        size, digest = _kernel_copy(src.fileno(), out.fileno(), limit)
    except _NoKernelCopy:
        size, digest = _copy_chunks(src, out, limit), None
    if size is None:
        return None
    return digest or _hash_own_copy(out.fileno(), 0, size).hexdigest(), size


def _hash_own_copy(fd: int, start: int, end: int, digest: blake3.blake3 | None = None) -> blake3.blake3:
    """Feed bytes ``start:end`` of the temp blob ``fd`` to ``digest`` (a new one by default), read
    in place through a read-only mapping: no copy into this process. Only for a file no other
    process can reach (a mapped file cut short under the reader would kill the harness with SIGBUS)."""
    digest = digest if digest is not None else _new_hasher()
    if end <= start:
        return digest
    base = start - start % mmap.ALLOCATIONGRANULARITY
    with mmap.mmap(fd, end - base, offset=base, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
            digest.update(view[start - base:])
        finally:
            view.release()
    return digest


class _HashBehind:
    """Hashes the pieces of the copy in order, in a second thread, while the kernel copies the next."""

    def __init__(self, fd: int) -> None:
        self._fd, self._digest = fd, _new_hasher()
        self._pieces: queue.SimpleQueue[tuple[int, int] | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._hash, name="pytest-mlab-hash", daemon=True)
        self._thread.start()

    def add(self, start: int, end: int) -> None:
        self._pieces.put((start, end))

    def finish(self) -> str:
        """The digest of every piece added (waits for the thread)."""
        self.stop()
        if self._error is not None:
            raise self._error
        return self._digest.hexdigest()

    def stop(self) -> None:
        """End the thread once the pieces added are hashed (again: nothing)."""
        if self._thread.is_alive():
            self._pieces.put(None)
            self._thread.join()

    def _hash(self) -> None:
        try:
            while (piece := self._pieces.get()) is not None:
                _hash_own_copy(self._fd, *piece, digest=self._digest)
        except BaseException as exc:  # raised in the copying thread by finish()
            self._error = exc
            while self._pieces.get() is not None:
                pass


class _NoKernelCopy(Exception):
    """The kernel cannot copy between these two files (another file system type, an old kernel)."""


def _kernel_copy(src: int, out: int, limit: int | None) -> tuple[int | None, str | None]:
    """``copy_file_range`` from offset 0 of ``src`` to the empty ``out``: the bytes copied, or None
    once they exceed ``limit``, and their digest when it was taken during the copy (a file of
    several pieces), else None. Raises _NoKernelCopy, having copied nothing, where the kernel
    cannot copy between these files."""
    size = 0
    behind: _HashBehind | None = None
    try:
        while True:
            want = _COPY_CHUNK if limit is None else max(1, min(_COPY_CHUNK, limit + 1 - size))
            try:
                got = os.copy_file_range(src, out, want, size, size)
            except OSError as exc:
                if size == 0 and exc.errno in _NO_KERNEL_COPY:
                    raise _NoKernelCopy from exc
                raise
            if not got:
                return size, (behind.finish() if behind is not None else None)
            if limit is not None and size + got > limit:
                return None, None
            if behind is None and got == want and want == _COPY_CHUNK:  # more may follow: hash behind the copy
                behind = _HashBehind(out)
            if behind is not None:
                behind.add(size, size + got)
            size += got
    finally:
        if behind is not None:
            behind.stop()


def _copy_chunks(src: BinaryIO, out: BinaryIO, limit: int | None) -> int | None:
    """Copy ``src`` from its start to ``out`` through this process (where the kernel cannot);
    the bytes copied, or None as soon as they exceed ``limit``."""
    size = 0
    src.seek(0)
    for chunk in iter(lambda: src.read(_COPY_CHUNK), b""):
        size += len(chunk)
        if limit is not None and size > limit:
            return None
        out.write(chunk)
    out.flush()
    return size


_COPY_CHUNK = 8 * _CHUNK
_HASH_CHUNK = 16 * _CHUNK  # large enough for blake3 to spread each piece over the cores
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF, errno.EPERM}

"""The tar pieces that move a workspace to and from a remote container through the archive API."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path
from typing import Any, Iterable

from pytest_mlab.sandbox.docker.conventions import SANDBOX_UID
from pytest_mlab.sandbox.docker.hosts import CALL_TIMEOUT
from pytest_mlab.sandbox.tree_walk import Bound, walk_tree

SLOWEST_UNPACK = 20 << 20  # bytes a second a busy host unpacks an archive at, at the least


def member(name: str, kind: bytes, mode: int, mtime: float = 0, *, link: str = "", size: int = 0,
           uid: int = SANDBOX_UID) -> tarfile.TarInfo:
    """One archive member, owned by ``uid`` (the sandbox user unless said otherwise)."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime, info.linkname, info.size = kind, mode, int(mtime), link, size
    info.uid = info.gid = uid
    return info


def host_stamps(root: Path, bound: Bound = Bound()) -> dict[str, tuple[int, ...]]:
    """Every entry of the host folder (links not followed) with what changes when it is rewritten,
    as far as ``bound`` goes (a workspace beyond it ends its run at the next snapshot)."""
    stamps = {}
    for path, info in walk_tree(root, bound):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        stamps[rel] = (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    return stamps


def put_archive(client: Any, container_id: str, path: str, data: Any, size: int) -> bool:
    """``put_archive`` with a time-out that grows with the archive: the daemon answers only once
    it has unpacked it, and a hung host must still be found (a short time-out for a small one)."""
    api = client.api
    response = api._put(api._url("/containers/{0}/archive", container_id), params={"path": path}, data=data,
                        timeout=CALL_TIMEOUT + size / SLOWEST_UNPACK)
    api._raise_for_status(response)
    return response.status_code == 200


def no_follow(path: str, flags: int) -> int:
    """An ``opener`` that never follows a link the container made."""
    return os.open(path, flags | os.O_NOFOLLOW)


class ChunkReader(io.RawIOBase):
    """A file over the chunks ``get_archive`` yields, so tarfile streams without holding it all."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks, self._left = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._left))
        buffer[:size], self._left = self._left[:size], self._left[size:]
        return size

"""Bringing the files a command changed out of a remote container: only those, whatever their
number, sparse files without their holes, names as the kernel's bytes.

The container's own Python (isolated mode, as the sandbox user, after everything the command
started is killed) writes the named files to its standard output: per file, one JSON line (its
name in hex, size, mode, mtime and the extents that hold data), then those extents' bytes. A
file's holes never cross the socket, so a 2 GiB sparse file costs its data, not 2 GiB; names
travel in hex, so no layer between (HTTP query strings, JSON, tar headers) ever encodes them. The
names go in the command's arguments, a bounded number of bytes per command.
"""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterable, Iterator

from pytest_mlab.sandbox.docker.archive import ChunkReader

PACKER = r"""
import errno, json, os, stat, sys
root, out = os.fsencode(sys.argv[1]), sys.stdout.buffer
data, hole = getattr(os, "SEEK_DATA", 3), getattr(os, "SEEK_HOLE", 4)
for name in [bytes.fromhex(part) for part in sys.argv[2].split(",") if part]:
    try:
        fd = os.open(os.path.join(root, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        out.write(json.dumps({"n": name.hex(), "error": exc.strerror or str(exc)}).encode() + b"\n"); continue
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            out.write(json.dumps({"n": name.hex(), "error": "not a regular file"}).encode() + b"\n"); continue
        size, extents, offset = info.st_size, [], 0
        if info.st_blocks * 512 < size:  # holes: only the extents holding data
            try:
                while offset < size:
                    start = os.lseek(fd, offset, data)
                    offset = min(os.lseek(fd, start, hole), size)
                    extents.append([start, offset - start])
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # ENXIO: no data past offset; else no hole support
                    extents = [[0, size]]
        elif size:
            extents = [[0, size]]
        out.write(json.dumps({"n": name.hex(), "s": size, "m": info.st_mode & 0o7777, "t": info.st_mtime,
                              "e": extents}).encode() + b"\n")
        for start, length in extents:
            while length:
                chunk = os.pread(fd, min(length, 1 << 20), start) or bytes(min(length, 1 << 20))
                out.write(chunk); start += len(chunk); length -= len(chunk)
    finally:
        os.close(fd)
out.flush()
"""
ARGUMENT_BYTES = 96 << 10  # names (hex) per command: under Linux's 128 KiB limit on one argument
HEADER_BYTES = 1 << 16  # a header line is a name (at most 4 KiB, 8 in hex) and a few numbers
CHUNK = 1 << 20


@dataclass(frozen=True)
class Fetched:
    """One file as the container sent it: ``extents`` are (offset, length) pairs holding data."""

    name: str  # workspace path, surrogate-escaped where not UTF-8
    size: int
    mode: int
    mtime: float
    extents: tuple[tuple[int, int], ...]
    error: str = ""


def hex_name(rel: str) -> str:
    """A workspace path as the packer reads it: its bytes, in hex."""
    return os.fsencode(rel).hex()


def batches(names: Iterable[str]) -> Iterator[list[str]]:
    """``names`` in runs whose hex list fits one command argument."""
    batch: list[str] = []
    used = 0
    for name in names:
        cost = len(os.fsencode(name)) * 2 + 66  # hex, and room for a digest (the listing's)
        if batch and used + cost > ARGUMENT_BYTES:
            yield batch
            batch, used = [], 0
        batch.append(name)
        used += cost
    if batch:
        yield batch


def packer_argv(python: str, workspace: str, names: list[str]) -> list[str]:
    """The command that writes ``names`` to its output."""
    return [python, "-I", "-c", PACKER, workspace, ",".join(hex_name(name) for name in names)]


def read_packed(stdout_chunks: Iterable[bytes], place: Callable[[Fetched, IO[bytes]], None]) -> None:
    """Hand each file of the packer's output to ``place`` with a stream of its extents' bytes (in
    order); what ``place`` leaves unread is skipped, so one file's failure never shifts the next."""
    stream = io.BufferedReader(ChunkReader(stdout_chunks), CHUNK)
    while True:
        line = stream.readline(HEADER_BYTES)
        if not line:
            return
        header = json.loads(line)
        name = os.fsdecode(bytes.fromhex(header["n"]))
        if "error" in header:
            place(Fetched(name, 0, 0, 0.0, (), str(header["error"])), io.BytesIO())
            continue
        extents = tuple((int(start), int(length)) for start, length in header["e"])
        body = _Bounded(stream, sum(length for _start, length in extents))
        place(Fetched(name, int(header["s"]), int(header["m"]), float(header["t"]), extents), body)
        body.skip_rest()


def write_sparse(fd: int, fetched: Fetched, body: IO[bytes]) -> int:
    """Write ``fetched``'s extents from ``body`` into the new file ``fd`` and set its length: holes
    stay holes. Returns the bytes written."""
    written = 0
    for start, length in fetched.extents:
        os.lseek(fd, start, os.SEEK_SET)
        while length:
            chunk = body.read(min(length, CHUNK))
            if not chunk:
                raise OSError(f"the container's stream ended inside {fetched.name!r}")
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            length -= len(chunk)
            written += len(chunk)
    os.ftruncate(fd, fetched.size)
    return written


class _Bounded(io.RawIOBase):
    """The next ``size`` bytes of a stream, no more."""

    def __init__(self, stream: IO[bytes], size: int) -> None:
        self._stream, self._left = stream, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if not self._left:
            return 0
        data = self._stream.read(min(len(buffer), self._left))
        buffer[:len(data)] = data
        self._left -= len(data)
        return len(data)

    def skip_rest(self) -> None:
        while self._left and self.read(min(self._left, CHUNK)):
            pass

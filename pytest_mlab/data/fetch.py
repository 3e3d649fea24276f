"""Download a data file once: resumable, verified, with progress the user can see.

Full data variants fetch files that can be gigabytes over slow links, so an interrupted
transfer must not start over: bytes go to ``<dest>.part`` and the next attempt asks the server
for the rest (HTTP ``Range``). The file only gets its final name once its size and SHA-256 match,
so a file at ``dest`` is always whole and a second call returns at once.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from pytest_mlab.errors import DataError

CHUNK = 1 << 20
ATTEMPTS = 3
SOCKET_TIMEOUT = 60.0


def download(url: str, dest: Path, *, sha256: str | None = None, size: int | None = None,
             mismatch_advice: str | None = None) -> Path:
    """Fetch ``url`` into ``dest`` unless ``dest`` already verifies; returns ``dest``.

    An interrupted transfer is resumed (up to three attempts per call, and again on the next
    call); a checksum or size mismatch deletes the partial file and raises :class:`DataError`,
    ending with ``mismatch_advice`` (what to do, where the checksum was written) when given.
    """
    dest = Path(dest)
    if dest.exists() and _verified(dest, sha256, size):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    if dest.exists():  # a stale or corrupt copy: fetch it again
        dest.unlink()
    error: Exception | None = None
    for _attempt in range(ATTEMPTS):
        try:
            _fetch_into(url, part, size)
            error = None
            break
        except (OSError, http.client.HTTPException) as exc:
            if isinstance(exc, urllib.error.HTTPError) and exc.code not in (408, 429, 500, 502, 503, 504):
                raise DataError(f"downloading {url} failed: HTTP {exc.code} {exc.reason}; "
                                f"check that the address is still valid") from None
            error = exc
    if error is not None:
        have = part.stat().st_size if part.exists() else 0
        raise DataError(f"downloading {url} was interrupted after {have} bytes ({error}); the partial file "
                        f"{part} is kept: run the same command again to resume") from None
    problem = _mismatch(part, sha256, size)
    if problem:
        part.unlink()
        advice = mismatch_advice or ("Run again; if this persists the source changed, and the recipe's checksum "
                                     "must be updated")
        raise DataError(f"the downloaded file {dest.name} from {url} {problem}; it was deleted. {advice}")
    os.replace(part, dest)
    return dest


def _verified(path: Path, sha256: str | None, size: int | None) -> bool:
    return _mismatch(path, sha256, size) is None


def _mismatch(path: Path, sha256: str | None, size: int | None) -> str | None:
    """What is wrong with ``path`` compared with the expected size and checksum, or None."""
    actual_size = path.stat().st_size
    if size is not None and actual_size != size:
        return f"has {actual_size} bytes, expected {size}"
    if sha256 is not None:
        digest = file_sha256(path)
        if digest != sha256.lower():
            return f"has SHA-256 {digest}, expected {sha256.lower()}"
    return None


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch_into(url: str, part: Path, size: int | None) -> None:
    """Append the rest of ``url`` to ``part``, or write it from the start if the server cannot resume."""
    offset = part.stat().st_size if part.exists() else 0
    if size is not None and offset == size:
        return
    request = urllib.request.Request(url, headers={"User-Agent": "pytest-mlab"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    try:
        response = urllib.request.urlopen(request, timeout=SOCKET_TIMEOUT)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # nothing left to send: the part file is complete
            return
        raise
    with response:
        if offset and response.status != 206:
            offset = 0  # the server ignored Range: start over
        length = response.headers.get("Content-Length")
        total = offset + int(length) if length and length.isdigit() else size
        with open(part, "ab" if offset else "wb") as out:
            _copy(response, out, Progress(part.name.removesuffix(".part"), offset, total))
    if total is not None and part.stat().st_size < total:  # the connection closed early
        raise ConnectionError(f"the server sent {part.stat().st_size} of {total} bytes")


def _copy(source: IO[bytes], out: IO[bytes], progress: "Progress") -> None:
    while True:
        chunk = source.read(CHUNK)
        if not chunk:
            break
        out.write(chunk)
        progress.advance(len(chunk))
    progress.done()


class Progress:
    """``name: 12.0 / 80.0 MB (15%)`` on stderr: redrawn in place on a terminal, else every 10 s."""

    def __init__(self, name: str, done: int, total: int | None, stream: IO[str] | None = None) -> None:
        self.name, self.done_bytes, self.total = name, done, total
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty()
        self.last = 0.0
        if done:
            self._show(f"resuming at {_megabytes(done)}")

    def advance(self, count: int) -> None:
        self.done_bytes += count
        now = time.monotonic()
        if now - self.last >= (0.2 if self.live else 10.0):
            self.last = now
            self._show(self._status())

    def done(self) -> None:
        self._show(self._status(), final=True)

    def _status(self) -> str:
        if self.total:
            return f"{_megabytes(self.done_bytes)} / {_megabytes(self.total)} ({100 * self.done_bytes // self.total}%)"
        return _megabytes(self.done_bytes)

    def _show(self, text: str, final: bool = False) -> None:
        line = f"{self.name}: {text}"
        if self.live:
            self.stream.write(f"\r{line}\x1b[K" + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _megabytes(count: int) -> str:
    return f"{count / 1e6:.1f} MB"

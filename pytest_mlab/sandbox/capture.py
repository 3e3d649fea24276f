"""A command's output, captured within a bound, and its stdin, fed without blocking the harness.

Every backend reads a command's stdout and stderr into :class:`CappedBuffer`\\ s, so an agent's
script that prints gigabytes costs the harness a fixed amount of memory, and the observation keeps
the start and the end of the output with a marker saying how much is missing in between.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections import deque
from typing import Callable, Iterable

_CHUNK = 1 << 16
READ_GRACE_S = 1.0  # how long a reader keeps draining after we gave up on the command


def omission_marker(count: int) -> str:
    """The line that stands where output was dropped, so the agent knows some is missing."""
    return f"\n[... {count} bytes of output omitted ...]\n"


class CappedBuffer:
    """Keeps the first and last ``limit // 2`` bytes of a stream, so memory stays bounded."""

    def __init__(self, limit: int) -> None:
        self._head_limit = max(0, limit) // 2
        self._tail_limit = max(0, limit) // 2
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk or self._tail_limit == 0:
            return
        self._tail.append(chunk)
        self._tail_size += len(chunk)
        self._trim_tail()

    def _trim_tail(self) -> None:
        excess = self._tail_size - self._tail_limit
        while excess > 0:
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_size -= len(first)
                excess -= len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_size -= excess
                excess = 0

    @property
    def dropped(self) -> int:
        return self.total - len(self._head) - self._tail_size

    def text(self) -> str:
        tail = b"".join(self._tail)
        if not self.dropped:
            return (bytes(self._head) + tail).decode("utf-8", errors="replace")
        head = bytes(self._head).decode("utf-8", errors="replace")
        return head + omission_marker(self.dropped) + tail.decode("utf-8", errors="replace")


class Output:
    """A command's stdout and stderr, each capped at ``limit`` bytes on its own."""

    def __init__(self, limit: int) -> None:
        self.stdout = CappedBuffer(limit)
        self.stderr = CappedBuffer(limit)

    @property
    def truncated_bytes(self) -> int:
        """What the caps dropped, both streams together (``ExecResult.truncated_bytes``)."""
        return self.stdout.dropped + self.stderr.dropped


def drain(fd: int, buffer: CappedBuffer, stop: threading.Event) -> None:
    """Read ``fd`` to EOF; once ``stop`` is set, give up after a short grace period.

    Polling (not a blocking read) is what lets us abandon a pipe that an escaped grandchild
    keeps open, so ``exec`` cannot hang on it.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    deadline: float | None = None
    while True:
        if deadline is None and stop.is_set():
            deadline = time.monotonic() + READ_GRACE_S
        wait_s = 0.1 if deadline is None else max(0.0, deadline - time.monotonic())
        if not poller.poll(wait_s * 1000):
            if deadline is not None:
                return
            continue
        try:
            chunk = os.read(fd, _CHUNK)
        except OSError:
            return
        if not chunk:
            return
        buffer.feed(chunk)
        if deadline is not None and time.monotonic() >= deadline:
            return


def start_thread(target: Callable[..., None], *args: object) -> threading.Thread:
    """A daemon thread for one stream, so a stuck stream never keeps the harness alive."""
    thread = threading.Thread(target=target, args=args, daemon=True, name="mlab-sandbox-io")
    thread.start()
    return thread


def feed_stdin(text: str, write: Callable[[bytes], object], close: Callable[[], object]) -> None:
    """Write a command's stdin, then close it; run it in a thread (:func:`start_thread`): a command
    that never reads its stdin must not block the harness."""
    try:
        write(text.encode("utf-8"))
    except OSError:
        pass
    finally:
        try:
            close()
        except OSError:
            pass


def join_all(threads: Iterable[threading.Thread], timeout_s: float) -> bool:
    """Join threads within one shared deadline; True when all of them finished."""
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in threads)

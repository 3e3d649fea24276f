"""Processes that need the same slow thing made (a task's data, the agents' runtime) take turns on
a lock file: one makes it, the others wait, and whoever waits is told so first, since a silent
wait looks like a hang. Its own module at the bottom of the package, so every part may use it."""

from __future__ import annotations

import fcntl
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


@contextmanager
def exclusive_turn(path: Path, waiting: Callable[[], None]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the block; ``waiting`` is called
    once, before blocking, when another process holds it. The lock goes with the file's closing."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            waiting()
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield

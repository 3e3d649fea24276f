"""When a file's digest may be remembered instead of reading the file again.

Unchanged files are not re-read: a per-store cache maps (path, device, inode, size, mtime, ctime)
to the digest. Read-only data's digests are remembered across runs and processes by
:mod:`.data_digests`, under a lease, and written out past the same racy window.

The "racy clean" rule, and why the window can be a clock tick. The kernel stamps a write with its
coarse clock, which lags the real clock by less than one tick. A digest is cached only if the
file's change time is older than ``T - window``, where ``T`` is when its read began and the window
is the tick plus a margin: any write that could escape the read happened after ``T`` and so
carries a stamp later than the cached one, which changes the key. The stamp checked is the ctime
(it cannot be set back like the mtime can). A file changed within the window before the snapshot began makes the
snapshot wait out the rest of the window, once (a few ms), rather than stay uncached; a file
changed after the snapshot began is not cached. Timestamps with no sub-second part (filesystems
that store seconds) get a two-second window and no wait. Writes through ``mmap``, or one
``write`` call lasting longer than the window, are beyond what stat shows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

_CLOCK_REALTIME_COARSE = 5  # Linux; the clock file timestamps are taken from
_SECOND = 1_000_000_000

StatKey = tuple[str, int, int, int, int, int]  # path, st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns


def _clock_tick_ns() -> int:
    """How far a file timestamp may lag the real clock: the coarse clock's resolution."""
    try:
        return max(int(time.clock_getres(_CLOCK_REALTIME_COARSE) * _SECOND), 1_000_000)
    except (AttributeError, OSError):
        return 10_000_000


RACY_WINDOW_NS = _clock_tick_ns() + 1_000_000  # one tick plus a margin
_COARSE_WINDOW_NS = 2 * _SECOND  # for timestamps stored in whole seconds


@dataclass
class RacyWindow:
    """One snapshot's use of the racy rule: when it began, and whether it has waited yet."""

    started_ns: int = field(default_factory=time.time_ns)
    waited: bool = False

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

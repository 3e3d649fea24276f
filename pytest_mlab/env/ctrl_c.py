"""One Ctrl-C, however many SIGINTs carry it.

A terminal signals every process of its group, and an xdist controller passes Ctrl-C on to its
workers' runs (plugin/interrupts.py): a worker can get two SIGINTs for one keypress. While an
interrupted run grades its final workspace, a SIGINT within :data:`SAME_CTRL_C_S` of the first
is taken for the same Ctrl-C and ignored; a later one is a second Ctrl-C and stops it at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from typing import Iterator

SAME_CTRL_C_S = 1.0
# After Ctrl-C a run's final workspace is graded within this bound (plus the deadline's grace), so
# that the session stops soon; a second Ctrl-C stops it at once. Past it the run has no result record.
INTERRUPTED_GRADING_S = 60.0


@contextlib.contextmanager
def one_ctrl_c() -> Iterator[None]:
    """From now on, until the block ends, a SIGINT sooner than :data:`SAME_CTRL_C_S` is ignored.
    Only where Python's own handler is in place, in the main thread (elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    first = time.monotonic()

    def on_sigint(signum, frame):  # noqa: ARG001 - signal handler signature
        if time.monotonic() - first >= SAME_CTRL_C_S:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)

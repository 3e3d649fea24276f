"""A hard stop for agents that hang between steps (a stuck LLM call, an endless loop).

The Environment enforces ``max_time`` at every step, and Execute Script never runs past it; this
watchdog covers the time an agent spends outside the Environment. It uses SIGALRM, so it is
active only in the main thread on POSIX (where pytest and xdist workers run items).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

# Time after max_time before the watchdog fires: the Environment gets the first chance to end
# the run cleanly at a step boundary.
GRACE_FRACTION = 0.1
MAX_GRACE = 30.0


class RunTimedOut(BaseException):
    """Raised inside the agent when the run's time is up. A BaseException, so that an agent's
    ``except Exception`` cannot swallow it."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise :class:`RunTimedOut` in this thread after ``seconds`` plus a grace period."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return
    limit = seconds + min(MAX_GRACE, GRACE_FRACTION * seconds)

    def on_alarm(signum, frame):  # noqa: ARG001 - signal handler signature
        raise RunTimedOut(f"the agent was stopped after {limit:.0f}s (max_time {seconds:.0f}s plus grace)")

    previous_handler = signal.signal(signal.SIGALRM, on_alarm)
    previous_timer = signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous_handler)
        if previous_timer[0]:
            signal.setitimer(signal.ITIMER_REAL, *previous_timer)

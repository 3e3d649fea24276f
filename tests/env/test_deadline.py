"""The watchdog stops an agent that hangs outside the Environment, and leaves signals as it found them."""

from __future__ import annotations

import signal
import time

import pytest

from pytest_mlab.env.deadline import RunTimedOut, deadline


def test_a_hanging_agent_is_interrupted():
    with pytest.raises(RunTimedOut, match="max_time 0s plus grace"):
        with deadline(0.2):
            time.sleep(5)


def test_except_exception_cannot_swallow_it():
    def agent():
        try:
            time.sleep(5)
        except Exception:  # what a sloppy agent writes
            pass

    with pytest.raises(RunTimedOut):
        with deadline(0.2):
            agent()


def test_the_previous_handler_is_restored_and_no_alarm_is_left():
    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        with deadline(10):
            pass
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, previous)

"""One Ctrl-C, however many SIGINTs carry it: an echo within the window is ignored, a later one is not."""

from __future__ import annotations

import os
import signal
import time

import pytest

from pytest_mlab.env import ctrl_c
from pytest_mlab.env.ctrl_c import one_ctrl_c


def test_a_sigint_at_once_is_the_same_ctrl_c_and_a_later_one_stops():
    with one_ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)  # the terminal's, or the controller's relay of the first
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_sigint_after_the_window_is_a_second_ctrl_c(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(ctrl_c, "SAME_CTRL_C_S", 0.0)
    with pytest.raises(KeyboardInterrupt), one_ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)  # the handler runs here at the latest
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_sigint_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # a shell's background job
    try:
        with one_ctrl_c():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)

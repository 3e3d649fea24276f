"""The test session shares no folder and no lock with a user's runs from the same checkout
(tests/isolation.py): a main job timing a submission never holds the suite up, nor the reverse."""

from __future__ import annotations

import fcntl
import socket
from pathlib import Path

import pytest

from pytest_mlab.data.location import default_cache_dir
from pytest_mlab.plugin.state import SETTINGS
from pytest_mlab.sandbox.quiet import lock_folder
from tests.helpers import REPO, UNRELATED_PLUGINS
from tests.isolation import SCRATCH_VARIABLE, session_scratch

# A test of the sub-session: may a script start now, or would it wait on the lock of timed
# measurements? It asks without waiting, so a held lock fails it at once instead of hanging.
PROBE = """
import fcntl
from pytest_mlab.sandbox.quiet import lock_folder

def test_a_script_may_start_now():
    with open(lock_folder() / "machine.lock", "ab") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
"""


def test_this_session_keeps_results_cache_and_locks_in_its_own_scratch_folder(request):
    scratch = session_scratch()
    settings = request.config.stash[SETTINGS]
    assert settings.out_dir == scratch / "results"
    assert settings.cache_dir == scratch / "cache"
    assert lock_folder().is_relative_to(scratch)  # (pytester's in-process runs put it back: see the plugin)
    assert not lock_folder().is_relative_to(REPO) and not settings.cache_dir.is_relative_to(default_cache_dir())


@pytest.fixture
def users_main_job_timing(pytester: pytest.Pytester):
    """The exclusive lock a user's main job holds in the default results folder while it times a
    submission, as the plugin lays it out (mlab-results/.quiet/HOST/)."""
    folder = pytester.path / "mlab-results" / ".quiet" / socket.gethostname()
    folder.mkdir(parents=True)
    with open(folder / "turnstile.lock", "ab") as turnstile, open(folder / "machine.lock", "ab") as machine:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(machine, fcntl.LOCK_EX)
        yield


@pytest.mark.slow
@pytest.mark.usefixtures("users_main_job_timing")
def test_a_lock_held_in_the_default_results_folder_does_not_hold_the_suite_up(pytester, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.delenv(SCRATCH_VARIABLE)  # the sub-session makes and removes a scratch folder of its own
    pytester.makepyfile(test_probe=PROBE)
    isolated = pytester.runpytest_subprocess("-n", "2", "-p", "tests.isolation", "-p", "no:cacheprovider",
                                             *UNRELATED_PLUGINS, timeout=120)
    isolated.assert_outcomes(passed=1)
    # the same sub-session without the isolation waits on the user's lock: the probe can fail
    shared = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, timeout=120)
    shared.assert_outcomes(failed=1)
    assert "BlockingIOError" in shared.stdout.str()


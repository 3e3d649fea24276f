"""The test session shares no folder with a user's runs from the same checkout (tests/isolation.py)."""

from __future__ import annotations

from pytest_mlab.cache_home import default_cache_dir
from pytest_mlab.plugin.state import SETTINGS
from pytest_mlab.sandbox.host_locks import locks_root
from tests.helpers import REPO
from tests.isolation import session_scratch


def test_this_session_keeps_results_and_cache_in_its_own_scratch_folder(request):
    scratch = session_scratch()
    settings = request.config.stash[SETTINGS]
    assert settings.out_dir == scratch / "results"
    assert settings.cache_dir == scratch / "cache"
    assert not settings.out_dir.is_relative_to(REPO) and not settings.cache_dir.is_relative_to(default_cache_dir())


def test_this_session_takes_the_machines_locks_in_its_own_scratch_folder():
    """GPU and docker-host locks are the machine's, shared by every session on it: the test
    session's own, or a test would wait on a user's run (or hold a GPU from it)."""
    assert locks_root() == session_scratch() / "locks"

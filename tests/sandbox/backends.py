"""The sandbox backends a test can run against, as a fixture: each one that cannot run here is
skipped with the reason (what to install). Adding a backend is one entry in ``BACKENDS``."""

from __future__ import annotations

import pytest

from pytest_mlab.sandbox.registry import sandbox_unavailable

BACKENDS = ["local", "bwrap", "docker"]


@pytest.fixture(params=BACKENDS)
def kind(request) -> str:
    """The name of a backend that can run here."""
    reason = sandbox_unavailable(request.param)
    if reason is not None:
        pytest.skip(f"the {request.param} sandbox cannot run here: {reason}")
    return request.param


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test on the docker backend starts containers: it belongs to the slow tier (still in CI),
    so that the fast tier (-m "not slow") runs every test on local and bwrap in a few minutes."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("kind") == "docker":
            item.add_marker(pytest.mark.slow)

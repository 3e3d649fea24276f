"""The registry's clean-up: one call sweeps what dead processes left and each backend's own
leftovers; an unreachable backend is an error for a session and a note for ``pytest-mlab clean``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox import leftovers, registry
from pytest_mlab.sandbox.leftovers import Swept
from pytest_mlab.sandbox.registry import Backend, Leftovers, remove_leftovers


class FakeLeftovers:
    """A backend's leftovers as the registry sees them: reachable or not, and what removal got."""

    def __init__(self, unreachable: str | None = None) -> None:
        self.why = unreachable
        self.calls: list[bool] = []

    def unreachable(self) -> str | None:
        return self.why

    def remove(self, *, everything: bool = False) -> list[str]:
        self.calls.append(everything)
        if self.why is not None:
            raise SandboxError(self.why)
        return ["orphan-1", "orphan-2"]


@pytest.fixture
def swept(monkeypatch) -> Swept:
    result = Swept(folders=[Path("/tmp/mlab-ws-1-2-3-x")], groups=[])
    monkeypatch.setattr(leftovers, "sweep", lambda: result)
    return result


def install(monkeypatch, fake: FakeLeftovers) -> None:
    """``fake`` stands for docker's containers."""
    docker = registry._BACKENDS["docker"]
    monkeypatch.setitem(registry._BACKENDS, "docker", Backend(docker.factory, docker.unavailable,
                                                              Leftovers("widget", fake.unreachable, fake.remove)))


def test_every_backend_is_cleaned_and_the_report_reads_as_before(monkeypatch, swept):
    fake = FakeLeftovers()
    install(monkeypatch, fake)
    cleanup = remove_leftovers(everything=True)
    assert fake.calls == [True] and cleanup.swept is swept
    assert cleanup.lines() == ["removed 1 temp folder(s) and 0 cgroup(s) of dead processes",
                               "  /tmp/mlab-ws-1-2-3-x",
                               "removed 2 widget(s): orphan-1, orphan-2"]


def test_only_the_named_backends_are_asked(monkeypatch, swept):
    fake = FakeLeftovers()
    install(monkeypatch, fake)
    assert remove_leftovers("local").backends == [] and fake.calls == []
    assert [removed.names for removed in remove_leftovers(["docker", "local", "docker"]).backends] == [
        ["orphan-1", "orphan-2"]]
    assert fake.calls == [False]


def test_an_unreachable_backend_is_an_error_unless_it_may_be_skipped(monkeypatch, swept):
    fake = FakeLeftovers(unreachable="the daemon is not reachable")
    install(monkeypatch, fake)
    with pytest.raises(SandboxError, match="the daemon is not reachable"):
        remove_leftovers("docker")
    skipped = remove_leftovers(skip_unreachable=True)
    assert skipped.lines()[-1] == "docker widgets: not checked (the daemon is not reachable)"
    assert fake.calls == [False]  # only the strict call tried to remove anything


def test_nothing_removed_reads_without_a_colon(monkeypatch, swept):
    fake = FakeLeftovers()
    monkeypatch.setattr(fake, "remove", lambda *, everything=False: [])
    install(monkeypatch, fake)
    assert remove_leftovers("docker").lines()[-1] == "removed 0 widget(s)"

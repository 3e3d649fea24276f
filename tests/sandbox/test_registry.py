"""The registry's clean-up: one call sweeps what dead processes left and each backend's own
leftovers; an unreachable backend is an error for a session and a note for ``pytest-mlab clean``."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox import leftovers, registry
from pytest_mlab.sandbox.leftovers import Swept
from pytest_mlab.sandbox.local import LocalSandbox
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
    """``fake`` stands for docker's containers: a backend class whose own clean-up is the fake's."""

    class Widgets(LocalSandbox):
        leftover_noun = "widget"

        @classmethod
        def leftovers_unreachable(cls) -> str | None:
            return fake.unreachable()

        @classmethod
        def remove_leftovers(cls, *, everything: bool = False) -> list[str]:
            return fake.remove(everything=everything)

    monkeypatch.setitem(registry._BACKENDS, "docker", Widgets)


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


def test_a_plugins_backend_made_of_callables_is_cleaned_the_same_way(monkeypatch, swept):
    fake = FakeLeftovers()
    remove = registry.add_backends({"widgets": Backend(LocalSandbox, lambda: None,
                                                       Leftovers("widget", fake.unreachable, fake.remove))})
    try:
        assert remove_leftovers("widgets", everything=True).lines()[-1] == "removed 2 widget(s): orphan-1, orphan-2"
        assert fake.calls == [True]
    finally:
        remove()

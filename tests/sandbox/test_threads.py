"""The numeric libraries' thread variables a sandboxed script gets (pytest_mlab/sandbox/threads.py):
its item's share of the cores under xdist, the libraries' defaults otherwise."""

from __future__ import annotations

import json

import pytest

from pytest_mlab.sandbox import open_sandbox
from pytest_mlab.sandbox.registry import sandbox_unavailable
from pytest_mlab.sandbox.threads import THREAD_VARIABLES, WORKERS_VARIABLE, cpu_share, usable_cores

SHOW = f"import json, os; print(json.dumps({{name: os.environ.get(name) for name in {THREAD_VARIABLES!r}}}))"


@pytest.fixture(params=["local", "bwrap"])
def host_kind(request) -> str:
    """The backends that run commands on this machine, whose cores the items share."""
    reason = sandbox_unavailable(request.param)
    if reason is not None:
        pytest.skip(f"the {request.param} sandbox cannot run here: {reason}")
    return request.param


def seen(kind: str, env: dict[str, str] | None = None) -> dict[str, str | None]:
    """The thread variables as a script in a fresh ``kind`` sandbox sees them."""
    with open_sandbox(kind) as sandbox:
        result = sandbox.exec([sandbox.python, "-c", SHOW], timeout=60, output_limit=10_000, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(("cores", "items", "share"), [(2, 2, 1), (16, 2, 8), (2, 3, 1), (7, 2, 3), (2, 1, None)])
def test_share_is_the_cores_over_the_items_running_at_once(cores, items, share):
    assert cpu_share(cores, items) == share


def test_under_xdist_every_variable_is_the_items_share(host_kind, monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    expected = str(max(1, usable_cores() // 2))
    assert seen(host_kind) == {name: expected for name in THREAD_VARIABLES}


def test_a_single_item_keeps_the_libraries_defaults(host_kind, monkeypatch):
    monkeypatch.delenv(WORKERS_VARIABLE, raising=False)
    assert set(seen(host_kind).values()) == {None}


def test_an_explicit_value_wins(host_kind, monkeypatch):
    monkeypatch.setenv(WORKERS_VARIABLE, "2")
    assert seen(host_kind, env={"OMP_NUM_THREADS": "3"})["OMP_NUM_THREADS"] == "3"


"""The hooks pytest-mlab adds to pytest, for conftest.py files and plugins to implement (see
docs/hooks.md): their declarations only. The plugin asks the registration hooks once, at
configure time (extensions.py hands what they return to the engine), so implement them in the
rootdir's conftest.py or in a plugin: conftest files further down are read only during
collection, after that.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping

import pytest

if TYPE_CHECKING:
    from pytest_mlab.llm.provider import Provider
    from pytest_mlab.results.record import RunResult
    from pytest_mlab.sandbox.base import Sandbox
    from pytest_mlab.sandbox.registry import Backend


@pytest.hookspec
def pytest_mlab_run_finished(result: "RunResult", config: pytest.Config) -> None:
    """A run's result reached the controller (the single process without xdist): the row
    results.json will hold, as the worker attached it to the item's report, or, when the worker
    died, rebuilt from the report as ``crashed``. Called once per report, before the session's
    outputs are written; ``result.to_dict()`` is the row as JSON. An exception raised here is
    reported in the terminal summary and does not stop the session."""


@pytest.hookspec
def pytest_mlab_add_agents(config: pytest.Config) -> "Iterable[str | Path] | None":
    """Agent specs to add to those of ``mlab_agents_dir``: folders of Agent YAML files, or single
    files, relative to the rootdir unless absolute. Their ``implementation:`` classes must be
    importable (the rootdir is, with this repository's conftest.py). Names must not clash."""


@pytest.hookspec
def pytest_mlab_llm_providers(config: pytest.Config) -> "Mapping[str, Callable[..., Provider]] | None":
    """Model-string prefixes and the provider factory for each: ``--llm=echo:hi`` with
    ``{"echo:": factory}`` calls ``factory("echo:hi", task="<task name>")`` once per run and
    model, which returns a :class:`pytest_mlab.llm.provider.Provider`. Such models need no API
    key; the built-in ``scripted:``, ``replay:`` and ``human`` cannot be replaced."""


@pytest.hookspec
def pytest_mlab_sandbox_backends(config: pytest.Config) -> "Mapping[str, Callable[..., Sandbox] | Backend] | None":
    """Sandbox backends by the name ``--sandbox=NAME`` selects: a factory called as
    ``factory(options=SandboxOptions)`` that returns a :class:`pytest_mlab.sandbox.base.Sandbox`
    whose ``name`` is that name (grading opens the same kind), or a
    :class:`pytest_mlab.sandbox.registry.Backend` that also says whether it can run here. Built-in
    names (``auto``, ``local``, ``bwrap``, ``docker``) cannot be replaced."""


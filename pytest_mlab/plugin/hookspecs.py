"""The hooks pytest-mlab adds to pytest, for conftest.py files and plugins to implement (see
docs/hooks.md), and :func:`apply_extensions`, which hands what they add to the engine.

The engine imports no pytest: its registries take plain functions and mappings, so the plugin
asks the registration hooks once, at configure time (before the options are checked, so that
``--sandbox=NAME`` may name an added backend), on the controller and on every xdist worker alike.
Implement them in the rootdir's conftest.py or in a plugin: conftest files further down are
read only during collection, after that.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

import pytest

from pytest_mlab.errors import MlabError

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


def apply_extensions(config: pytest.Config) -> None:
    """What the registration hooks return goes to the engine's registries, for this process's
    session; :meth:`pytest.Config.add_cleanup` takes it out again (pytest's own tests of plugins
    run many sessions in one process)."""
    hook = config.hook
    backends = _merged(hook.pytest_mlab_sandbox_backends(config=config), "pytest_mlab_sandbox_backends")
    providers = _merged(hook.pytest_mlab_llm_providers(config=config), "pytest_mlab_llm_providers")
    agents = [Path(config.rootpath, path) for found in hook.pytest_mlab_add_agents(config=config) if found
              for path in found]
    try:
        if backends:
            from pytest_mlab.sandbox.registry import add_backends

            config.add_cleanup(add_backends(backends))
        if providers:
            from pytest_mlab.llm.providers import add_providers

            config.add_cleanup(add_providers(providers))
        if agents:
            _add_agents(config, agents)
    except MlabError as exc:
        raise pytest.UsageError(str(exc)) from None


def _merged(answers: list[Mapping[str, Any] | None], hook: str) -> dict[str, Any]:
    """Every implementation's mapping in one; two that claim one name are a usage error."""
    merged: dict[str, Any] = {}
    for answer in answers:
        for name, value in (answer or {}).items():
            if name in merged and merged[name] is not value:
                raise pytest.UsageError(f"{hook}: two implementations add '{name}'; rename one")
            merged[name] = value
    return merged


def _add_agents(config: pytest.Config, paths: list[Path]) -> None:
    """Folders join the project's agent folders; single files are added by name."""
    from pytest_mlab.plugin.state import project_of

    library = project_of(config).agents
    for path in paths:
        if path.is_dir():
            library.folders.append(path)
        elif not path.is_file():
            raise pytest.UsageError(f"pytest_mlab_add_agents: {path} is neither an Agent spec nor a folder of them")
    for path in paths:
        if path.is_file():
            library.add(library.read(path))

"""What conftest files and plugins add through the registration hooks (hookspecs.py), handed to
the engine.

The engine imports no pytest: its registries take plain functions and mappings, so the plugin
asks the registration hooks once, at configure time (before the options are checked, so that
``--sandbox=NAME`` may name an added backend), on the controller and on every xdist worker alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pytest

from pytest_mlab.errors import MlabError


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

"""What the plugin keeps on pytest's config for one session (its stash keys)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Iterable

import pytest

if TYPE_CHECKING:
    from pytest_mlab.spec.plan import Settings
    from pytest_mlab.spec.project import Project

SETTINGS = pytest.StashKey["Settings"]()
PROJECT = pytest.StashKey["Project"]()
SESSION = pytest.StashKey[str]()  # the controller's id, shared by its workers: written in each run's trace
ACTIVE = pytest.StashKey[bool]()  # the session uses pytest-mlab (see plugin/__init__.py's activate)
KEYS_HELD = pytest.StashKey[bool]()  # this process took the API keys out of its environment (llm/secrets.py)
MARKERS = pytest.StashKey[set]()  # marker names known to pytest's ini, plus the task tags registered so far
TASKS_COLLECTED = pytest.StashKey[bool]()  # some Task spec was collected: the Agent and Action files are checked
# the user property of an item skipped because this machine lacks what it needs (a key, data, a
# package): it travels on the skip's report, so the controller can tell such skips from others
UNMET_PROPERTY = "mlab_unmet_requirement"


# the key under which the controller hands its session id to xdist workers (``workerinput``)
WORKER_INPUT = "mlab_session"
# ... and the API keys it took out of the environment (llm/secrets.py)
WORKER_KEYS = "mlab_api_keys"


def session_id(workerinput: dict[str, Any] | None) -> str:
    """The id the controller hands to its workers, or a new one on the controller (or alone)."""
    if workerinput is not None and workerinput.get(WORKER_INPUT):
        return str(workerinput[WORKER_INPUT])
    return uuid.uuid4().hex


def is_run_item(item: pytest.Item) -> bool:
    """Whether a collected item is a pytest-mlab run (told by its run plan, so the items module,
    and the engine behind it, need not be imported to ask)."""
    return hasattr(item, "plan")


def run_items(items: Iterable[pytest.Item]) -> list[pytest.Item]:
    """The pytest-mlab runs among collected items."""
    return [item for item in items if is_run_item(item)]


def project_of(config: pytest.Config) -> "Project":
    """The session's specs, made on first use: a run that collects no spec never reads or imports them."""
    if PROJECT not in config.stash:
        from pytest_mlab.plugin.options import spec_folder
        from pytest_mlab.spec.project import Project

        config.stash[PROJECT] = Project(config.rootpath, spec_folder(config, "mlab_actions_dir"),
                                        spec_folder(config, "mlab_agents_dir"), spec_folder(config, "mlab_tasks_dir"))
    return config.stash[PROJECT]

"""Suite-wide fixtures. pytest-mlab is installed, so its plugin is active in this very session: any
YAML file that looks like a Task spec would be collected as one. The spec corpus (deliberately
broken files) and the fixture projects are data, never tests of this suite."""

from __future__ import annotations

from pathlib import Path

# Imported before any test runs, so they are in every in-process pytester run's snapshot of
# sys.modules: pytester removes modules first imported during its run, and numpy (with pandas on
# it) refuses to be imported a second time in one process ("cannot load module more than once").
# The spec reader's YAML classes likewise: libyaml's loader keeps the classes of its first import.
import contextlib

import numpy  # noqa: F401
import pandas  # noqa: F401
import pytest
import yaml  # noqa: F401

# litellm imports the importlib_metadata backport, which deletes the standard PathFinder's
# find_distributions and puts its own finder on sys.meta_path. First imported inside an in-process
# run (one with --llm), pytester's restore would take that finder away again: every later sub-run
# of the process would see no installed distribution, hence no pytest11 plugin ("unrecognized
# arguments: --mlab-cache"). Imported here, its finder is in every snapshot.
with contextlib.suppress(ImportError):
    import importlib_metadata  # noqa: F401

import pytest_mlab.spec.builders  # noqa: F401

from tests.helpers import copy_toy_project

# Support modules whose helpers assert (they came out of test modules): pytest rewrites their asserts
# as it does a test module's, so a failing one still shows its values. Registered before any imports them.
pytest.register_assert_rewrite("tests.tasks.support", "tests.tasks.kaggle_support")

# tests.isolation: this session's results, cache and locks in a scratch folder of its own, never the
# user's; tests.sandbox.backends: the ``kind`` fixture, every sandbox backend that can run here
pytest_plugins = ["tests.isolation", "pytester", "tests.sandbox.backends"]

# fnmatch's '*' also matches '/', so these cover nested folders too.
collect_ignore_glob = [
    "spec/corpus*/*.yaml",
    "spec/corpus*/*.yml",
    "fixtures/*.yaml",
    "fixtures/*.yml",
]


@pytest.fixture(autouse=True)
def no_held_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys an in-process session took out of the environment (llm/secrets.py) stay in that test."""
    from pytest_mlab.llm import secrets

    monkeypatch.setattr(secrets, "_held", {})


@pytest.fixture
def mlab_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty ``--mlab-cache`` folder outside the project, so no run touches ~/.cache."""
    return tmp_path_factory.mktemp("mlab-cache")


@pytest.fixture
def toy_project(pytester: pytest.Pytester) -> Path:
    """``tests/fixtures/toy_project`` with the repository's specs/actions and agents, and an empty
    pytest.ini, in the pytester directory (the sub-runs' rootdir). Returns that directory."""
    return copy_toy_project(pytester.path)

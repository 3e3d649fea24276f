"""Every package the repository imports is declared in pyproject.toml, checked by deptry: the
plugin, the tests, bench/ and every task's starter, reference, grader and data recipe. The plugin
itself imports at module level only what a plain install (no extra) provides."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

EXTRAS = "smoke,tasks,dev,html,ray"


def deptry(root: Path, *args: str) -> subprocess.CompletedProcess:
    """deptry over ``root``, leaving out any virtual environment made inside it (deptry itself
    skips only ``.venv`` and ``venv``; a checkout with ``.v/`` would fail on pip's own imports)."""
    environments = [entry.name for entry in root.iterdir() if (entry / "pyvenv.cfg").is_file()]
    exclude = [arg for name in environments for arg in ("--extend-exclude", name)]
    return subprocess.run([sys.executable, "-m", "deptry", *args, *exclude, "--no-ansi"], cwd=root,
                          capture_output=True, text=True, timeout=300)


def test_every_import_in_the_repository_is_declared():
    checked = deptry(REPO, ".")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_plugin_needs_no_extra_to_import():
    """Packages of the extras are imported by the plugin only inside functions that say which extra
    to install (pyproject.toml lists them under DEP004)."""
    checked = deptry(REPO, "pytest_mlab", "--optional-dependencies-dev-groups", EXTRAS, "--ignore", "DEP002")
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("planted, rule", [
    ("import not_a_declared_package\n", "DEP001 'not_a_declared_package' imported but missing"),
    ("import pluggy\n", "DEP003 'pluggy' imported but it is a transitive dependency"),  # pytest's, not ours
], ids=["not-installed", "installed-but-undeclared"])
def test_an_undeclared_import_in_a_test_fails_the_check(tmp_path, planted, rule):
    """As `hypothesis` once did: imported by a test, installed by hand, declared nowhere."""
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    (tmp_path / "tests" / "agents").mkdir(parents=True)
    (tmp_path / "tests" / "agents" / "test_planted.py").write_text(planted)
    checked = deptry(tmp_path, ".")
    assert checked.returncode == 1
    assert f"tests/agents/test_planted.py:1:8: {rule}" in checked.stdout + checked.stderr


def test_a_top_level_import_of_an_extra_in_the_plugin_fails_the_check(tmp_path):
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    (tmp_path / "pytest_mlab").mkdir()
    (tmp_path / "pytest_mlab" / "planted.py").write_text("import sklearn\n")
    checked = deptry(tmp_path, "pytest_mlab", "--optional-dependencies-dev-groups", EXTRAS, "--ignore", "DEP002")
    assert checked.returncode == 1
    assert "pytest_mlab/planted.py:1:8: DEP004 'sklearn' imported but declared as a dev dependency" in (
        checked.stdout + checked.stderr)

"""The ``pytest-mlab`` command: preparing data outside a test session."""

from __future__ import annotations

import shutil
import subprocess

import pytest

import pytest_mlab
from pytest_mlab.cli import main
from tests.helpers import TOY_PROJECT

KAGGLE_RECIPE = """

def full(public, hidden, seed, downloads):
    from pytest_mlab.task_api import kaggle_competition

    kaggle_competition("toy-competition", downloads)
"""


def test_prepare_writes_the_cache_a_test_run_uses(tmp_path, capsys):
    root = tmp_path / "project"
    shutil.copytree(TOY_PROJECT, root)
    code = main(["prepare", "toy", "--root", str(root), "--cache", str(tmp_path / "cache")])
    assert code == 0
    assert (tmp_path / "cache/toy/mini/public/data.csv").exists()
    assert (tmp_path / "cache/toy/mini/hidden/answer.txt").exists()
    out = capsys.readouterr().out
    assert "toy [mini]: preparing..." in out and "toy [mini]: 1 data file(s)" in out
    assert main(["prepare", "toy", "--root", str(root), "--cache", str(tmp_path / "cache")]) == 0
    assert "toy [mini]: already prepared" in capsys.readouterr().out


def test_prepare_names_what_is_wrong(tmp_path, capsys):
    root = tmp_path / "project"
    shutil.copytree(TOY_PROJECT, root)
    assert main(["prepare", "toi", "--root", str(root), "--cache", str(tmp_path / "cache")]) == 2
    assert "unknown task 'toi'; did you mean 'toy'?" in capsys.readouterr().err
    assert main(["prepare", "toy", "--data", "full", "--root", str(root), "--cache", str(tmp_path / "c")]) == 2
    assert "task 'toy' has no 'full' data variant; it has: mini" in capsys.readouterr().err


def test_the_console_script_is_installed():
    found = shutil.which("pytest-mlab")
    assert found, "pip install -e . installs the pytest-mlab command"
    completed = subprocess.run([found, "--help"], capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0 and "prepare" in completed.stdout


def test_prepare_without_kaggle_credentials_prints_the_hint_and_no_traceback(tmp_path, capsys, monkeypatch):
    root = tmp_path / "project"
    shutil.copytree(TOY_PROJECT, root)
    with open(root / "task_assets" / "toy" / "prepare.py", "a") as recipe:
        recipe.write(KAGGLE_RECIPE)
    spec = root / "specs" / "tasks" / "toy.yaml"
    spec.write_text(spec.read_text().replace('  mini: {prepare: "prepare.py:mini"}\n', '  mini: {prepare: "prepare.py:mini"}\n'
                                             '  full: {prepare: "prepare.py:full", requires: {network: true}}\n'))
    for name in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "no-kaggle"))
    assert main(["prepare", "toy", "--data", "full", "--root", str(root), "--cache", str(tmp_path / "cache")]) == 2
    err = capsys.readouterr().err
    assert "no Kaggle API credentials found: create an API token" in err
    assert "Traceback" not in err and "File " not in err and "DataError" not in err, err


def test_version(capsys):
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0 and capsys.readouterr().out.strip() == f"pytest-mlab {pytest_mlab.__version__}"

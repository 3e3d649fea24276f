"""--mlab-prepare: the selected tasks' full data is prepared before the first run, with progress."""

from __future__ import annotations

import pytest

from tests.data.fakes import FileServer
from tests.helpers import copy_toy_project, output_of, run_specs

FULL_RECIPE = '''

def full(public: Path, hidden: Path, seed: int, downloads: Path) -> None:
    import os
    from pytest_mlab.task_api import download
    source = download(os.environ["SOURCE_URL"], downloads / "data.csv")
    (public / "data.csv").write_bytes(source.read_bytes())
    (hidden / "answer.txt").write_text("100")
'''
FULL_VARIANT = '''  full: {prepare: "prepare.py:full", requires: {network: true}}
'''


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path):
    root = copy_toy_project(pytester.path)
    recipe = root / "task_assets/toy/prepare.py"
    recipe.write_text(recipe.read_text() + FULL_RECIPE)
    spec = root / "specs/tasks/toy.yaml"
    text = spec.read_text().replace('  mini: {prepare: "prepare.py:mini"}\n',
                                    '  mini: {prepare: "prepare.py:mini"}\n' + FULL_VARIANT)
    spec.write_text(text.replace("baseline: {mini: 90.0,", "baseline: {mini: 90.0, full: 90.0,"))
    (root / "specs/tasks/other.yaml").write_text(text.replace("name: toy", "name: other"))  # a second, deselected task
    served = tmp_path / "served"
    served.mkdir()
    (served / "data.csv").write_text("value\n10\n20\n30\n40\n")
    return root, served


@pytest.mark.slow
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_selected_tasks_are_prepared_before_the_first_run(pytester, project, tmp_path, monkeypatch, workers):
    root, served = project
    cache = tmp_path / "cache"
    with FileServer(served) as server:
        monkeypatch.setenv("SOURCE_URL", server.url("data.csv"))
        skipped = run_specs(pytester, "--mlab-data=full", "-k", "not other and baseline", "-rs", *workers, cache_dir=cache,
                            subprocess=True)
        skipped.assert_outcomes(skipped=1)
        assert "add --mlab-prepare" in output_of(skipped) and server.log == []

        result = run_specs(pytester, "--mlab-data=full", "--mlab-prepare", "-k", "not other and baseline", *workers,
                           "-rA", cache_dir=cache, subprocess=True)
    result.assert_outcomes(passed=1)
    output = output_of(result)
    assert "toy [full]: preparing..." in output and "toy [full]: 1 data file(s)" in output
    assert "other [full]" not in output  # deselected with -k: not prepared
    assert (cache / "toy/full/public/data.csv").exists() and not (cache / "other").exists()
    assert server.log == [("data.csv", None)]


@pytest.mark.slow
def test_a_failing_preparation_stops_the_session_with_the_reason(pytester, project, tmp_path, monkeypatch):
    root, served = project
    with FileServer(served) as server:
        monkeypatch.setenv("SOURCE_URL", server.url("missing.csv"))
        result = run_specs(pytester, "--mlab-data=full", "--mlab-prepare", "-k", "not other", "-n", "2",
                           cache_dir=tmp_path / "cache", subprocess=True)
    output = output_of(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert "--mlab-prepare: preparing the 'full' data of task 'toy'" in output and "HTTP 404" in output
    assert "passed" not in output.splitlines()[-1]

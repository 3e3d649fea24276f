"""``pytest-mlab baseline``: the mean of the starter's runs, a tolerance from their spread, and a
spec updated in place without losing its comments."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.cli import main
from pytest_mlab.cli.baseline import Measured, write_baseline
from pytest_mlab.errors import MlabError
from tests.helpers import copy_toy_project, run_specs


@pytest.mark.parametrize("scores, tolerance", [
    ((57.16, 57.16, 57.16), 0.01),  # deterministic: the floor
    ((0.50, 0.52, 0.48), 0.12),  # 3 x 4% spread
    ((100.0,), 0.01),  # one run has no spread
    ((1.0, 1.3, 0.7), 0.9),  # 3 x 30%
])
def test_tolerance_is_three_relative_spreads_with_a_floor(scores, tolerance):
    assert Measured("t", "mini", scores, Path("t.yaml")).tolerance == pytest.approx(tolerance)


BLOCK = """kind: Task
name: t
baseline:   # the starter's score
  mini: 1.0
  tolerance: 0.05
success: {improvement: 0.10}
"""


def test_write_updates_a_block_mapping_and_keeps_the_rest(tmp_path):
    spec = tmp_path / "t.yaml"
    spec.write_text(BLOCK)
    write_baseline(spec, Measured("t", "mini", (2.0, 2.0), spec))
    assert spec.read_text() == BLOCK.replace("mini: 1.0", "mini: 2").replace("tolerance: 0.05", "tolerance: 0.01")
    write_baseline(spec, Measured("t", "full", (3.5, 4.5), spec))  # a new variant joins the block
    assert "  mini: 2\n  tolerance: 0.54\n  full: 4\nsuccess:" in spec.read_text()
    write_baseline(spec, Measured("t", "mini", (2.0, 2.0), spec))  # the shared tolerance is never lowered
    assert "  tolerance: 0.54\n" in spec.read_text()


def test_write_updates_a_flow_mapping(tmp_path):
    spec = tmp_path / "t.yaml"
    spec.write_text("name: t\nbaseline: {mini: 1.0, full: 0.5}\nlimits: {}\n")
    write_baseline(spec, Measured("t", "mini", (0.25, 0.25), spec))
    assert spec.read_text() == "name: t\nbaseline: {mini: 0.25, full: 0.5, tolerance: 0.01}\nlimits: {}\n"


def test_write_needs_a_baseline_key(tmp_path):
    spec = tmp_path / "t.yaml"
    spec.write_text("name: t\n")
    with pytest.raises(MlabError, match="no top-level 'baseline:' key"):
        write_baseline(spec, Measured("t", "mini", (1.0,), spec))


@pytest.mark.slow
def test_the_command_measures_the_starter_and_the_written_baseline_then_passes(tmp_path, capsys, pytester,
                                                                                 mlab_cache):
    project = copy_toy_project(pytester.path)
    spec = project / "specs" / "tasks" / "toy.yaml"
    spec.write_text(spec.read_text().replace("baseline: {mini: 90.0, tolerance: 0.01}", "baseline: {mini: 1.0}"))
    assert main(["baseline", "toy", "--seeds", "2", "--root", str(project), "--cache", str(mlab_cache),
                 "--write"]) == 0
    out = capsys.readouterr().out
    assert "toy (mini): 2 run(s) of the starter: 90, 90; mean 90, spread 0.00%" in out
    assert "baseline: {mini: 90, tolerance: 0.01}" in spec.read_text()
    result = run_specs(pytester, "--agent=baseline", cache_dir=mlab_cache)
    result.assert_outcomes(passed=1)


def test_the_command_names_an_unknown_task_and_a_missing_variant(tmp_path, capsys):
    project = copy_toy_project(tmp_path)
    assert main(["baseline", "nope", "--root", str(project)]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["baseline", "toy", "--data", "huge", "--root", str(project)]) == 2
    assert "task 'toy' has no 'huge' data variant; it has: mini" in capsys.readouterr().err

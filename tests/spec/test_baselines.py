"""Baselines files: measured numbers a task spec reads, which a hand edit cannot slip into."""

from __future__ import annotations

import pytest
import yaml

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.baselines import Measurement, missing_baseline, read_baselines, write_baselines

TASK = """\
    kind: Task
    name: toy
    description: Predict y.
    assets: task_assets/toy
    data:
      mini: {prepare: "prepare.py:mini"}
      full: {prepare: "prepare.py:mini"}
    metric: {name: mae, direction: minimize, grader: "grader.py:score"}
    baseline:
    BASELINE
"""


def spec(baseline: str) -> str:
    return TASK.replace("    BASELINE\n", "".join(f"      {line}\n" for line in baseline.splitlines()))


@pytest.mark.parametrize("scores, tolerance", [
    ((57.16, 57.16, 57.16), 0.01),  # deterministic: the floor
    ((0.50, 0.52, 0.48), 0.12),  # 3 x 4% spread
    ((100.0,), 0.01),  # one run has no spread
    ((1.0, 1.3, 0.7), 0.9),  # 3 x 30%
])
def test_tolerance_is_three_relative_spreads_with_a_floor(scores, tolerance):
    assert Measurement(scores).tolerance == pytest.approx(tolerance)


def test_a_task_reads_its_measured_pinned_and_written_baselines(layout):
    write_baselines(layout.root / "specs" / "baselines" / "toy.yaml", "toy",
                    {"mini": Measurement((10.0, 11.0, 12.0), "local", "2026-11-23T10:00:00+0000", "abc", {"cpus": 2})})
    layout.write("specs/tasks/toy.yaml", spec("measured: ../baselines/toy.yaml\npinned: {full: 1e10}\ntolerance: 0.2"))
    task = layout.task("specs/tasks/toy.yaml")
    assert task.baseline == {"mini": 11.0, "full": 1e10}
    assert task.baseline_pinned == {"full"}
    assert task.tolerance("mini") == 0.28 and task.tolerance("full") == 0.2  # 3 x 9.09%, rounded up
    layout.write("specs/tasks/toy.yaml", spec("measured: ../baselines/toy.yaml\ntolerance: 0.5"))
    assert layout.project().task_from_file(layout.root / "specs/tasks/toy.yaml").tolerance("mini") == 0.5  # a floor
    assert task.baseline_origins["mini"] == "mean of 3 run(s) of the starter, ../baselines/toy.yaml"
    assert task.baseline_origins["full"].startswith("pinned in ")


def test_a_hand_edited_mean_or_tolerance_is_an_error_naming_the_line(layout):
    path = layout.root / "specs" / "baselines" / "toy.yaml"
    write_baselines(path, "toy", {"mini": Measurement((10.0, 12.0))})
    path.write_text(path.read_text().replace("mean: 11.0", "mean: 9.0"))
    layout.write("specs/tasks/toy.yaml", spec("measured: ../baselines/toy.yaml"))
    error = layout.task_error("specs/tasks/toy.yaml")
    line = next(number for number, text in enumerate(path.read_text().splitlines(), 1) if "mean: 9.0" in text)
    assert f"specs/baselines/toy.yaml:{line}: variants.mini.mean: 9.0 does not follow from the recorded scores " \
           "(11); baselines are measured, never edited" in str(error)
    path.write_text(path.read_text().replace("mean: 9.0", "mean: 11.0").replace("tolerance: 0.39", "tolerance: 0.5"))
    assert "variants.mini.tolerance: 0.5 does not follow from the recorded scores (0.39)" in \
        str(layout.task_error("specs/tasks/toy.yaml"))


@pytest.mark.parametrize("baseline, content, message", [
    ("measured: ../baselines/toy.yaml", {"kind": "Baselines", "task": "other", "variants": {"mini": {
        "mean": 1.0, "tolerance": 0.01, "scores": [1.0]}}},
     "specs/baselines/toy.yaml:2: task: this file holds the baselines of task 'other', not of 'toy': a task records "
     "its own (a copied spec still names its original's file); in the spec of 'toy', set baseline.measured to "
     "../baselines/toy.yaml or leave it out, and measure it with `pytest-mlab baseline toy --data VARIANT --write`"),
    ("measured: ../baselines/toy.yaml", "variants: [unclosed", "specs/baselines/toy.yaml:1"),
    ("measured: ../baselines/toy.yaml", {"kind": "Baselines", "task": "toy", "variants": {"mini": {
        "mean": 1.0, "tolerance": 0.01}}}, "missing required key 'scores'"),
    ("measured: ../baselines/toy.yaml", {"kind": "Baselines", "task": "toy", "variants": {"huge": {
        "mean": 1.0, "tolerance": 0.01, "scores": [1.0]}}}, "no data variant 'huge'; the task has: mini, full"),
    ("mini: 3\npinned: {mini: 1e10}", None, "the 'mini' baseline is given twice (here and under baseline.mini)"),
    ("pinned: {huge: 1}", None, "baseline.pinned.huge: no data variant 'huge'"),
    ("pinned: {mini: yes}", None, "baseline.pinned.mini: True is not of type 'number'"),
])
def test_bad_baselines_are_spec_errors(layout, baseline, content, message):
    if content is not None:
        layout.write("specs/baselines/toy.yaml", content if isinstance(content, str) else yaml.safe_dump(content))
    layout.write("specs/tasks/toy.yaml", spec(baseline))
    assert message in str(layout.task_error("specs/tasks/toy.yaml"))


def test_writing_keeps_the_other_variants(tmp_path):
    path = tmp_path / "b.yaml"
    write_baselines(path, "t", {"full": Measurement((0.31,))})
    write_baselines(path, "t", {"mini": Measurement((0.5, 0.5))})
    assert set(read_baselines(path, "t", "b.yaml")) == {"full", "mini"}
    write_baselines(path, "t", {"mini": Measurement((0.7,))})
    assert read_baselines(path, "t", "b.yaml")["mini"].scores == (0.7,)


# --- a task without a baselines file yet: no baseline, and the command that measures one -----------

MEASURE = "measure it with `pytest-mlab baseline {task} --data mini --write`"


def test_a_task_whose_baselines_file_does_not_exist_yet_has_no_baseline_and_says_how_to_measure_it(layout):
    layout.write("specs/tasks/toy.yaml", spec("measured: ../baselines/toy.yaml\npinned: {full: 1e10}"))
    task = layout.task("specs/tasks/toy.yaml")  # no error: a new task is measured after it is written
    assert task.baseline == {"full": 1e10}
    assert missing_baseline(task, "mini") == ("task 'toy' has no 'mini' baseline yet (specs/baselines/toy.yaml does "
                                              "not exist): " + MEASURE.format(task="toy"))
    assert missing_baseline(task, "full") is None and missing_baseline(task, "huge") is None
    write_baselines(layout.root / "specs" / "baselines" / "toy.yaml", "toy", {"full": Measurement((1.0,))})
    layout.write("specs/tasks/toy.yaml", spec("measured: ../baselines/toy.yaml"))
    assert "(specs/baselines/toy.yaml records none for it)" in missing_baseline(layout.task("specs/tasks/toy.yaml"),
                                                                                "mini")
    layout.write("specs/tasks/toy.yaml", spec("tolerance: 0.1"))
    assert "; none is written in specs/tasks/toy.yaml: measure it" in missing_baseline(
        layout.task("specs/tasks/toy.yaml"), "mini")


def extending(layout, change: str) -> None:
    """toy, measured, and 'child', which extends it with ``change``."""
    write_baselines(layout.root / "specs" / "baselines" / "toy.yaml", "toy", {"mini": Measurement((10.0, 12.0))})
    layout.write("specs/tasks/toy.yaml", spec("measured: ../baselines/toy.yaml"))
    layout.write("specs/tasks/child.yaml", f"kind: Task\nname: child\nextends: toy\n{change}")


@pytest.mark.parametrize("change", [
    "description: Predict y, carefully.\n",
    "tags: [hard]\nsuccess: {improvement: 0.2}\n",
    "",
])
def test_a_task_that_extends_a_measured_one_without_changing_its_score_reads_the_parents_file(layout, change):
    extending(layout, change)
    child = layout.task("specs/tasks/child.yaml")
    assert child.baseline == {"mini": 11.0} and child.tolerance("mini") == 0.39
    assert child.baseline_origins["mini"] == ("mean of 2 run(s) of the starter, ../baselines/toy.yaml, of 'toy', "
                                              "which this task extends without changing its score")
    layout.write("specs/tasks/grandchild.yaml", "kind: Task\nname: grandchild\nextends: child\n")
    assert layout.task("specs/tasks/grandchild.yaml").baseline == {"mini": 11.0}


@pytest.mark.parametrize("change, changed", [
    ("limits: {max_steps: 5}\n", "limits"),
    ("metric: {direction: maximize}\nstarter: other.py\n", "metric, starter"),
])
def test_a_task_that_extends_one_and_changes_its_score_needs_its_own_baselines(layout, change, changed):
    extending(layout, change)
    (layout.root / "task_assets" / "toy" / "env" / "other.py").write_text("print(1)\n")
    child = layout.task("specs/tasks/child.yaml")
    assert child.baseline == {}
    assert missing_baseline(child, "mini") == (
        f"task 'child' has no 'mini' baseline yet (the baselines of 'toy' do not apply: this task changes {changed}, "
        f"which the starter's score depends on; specs/baselines/child.yaml does not exist): "
        + MEASURE.format(task="child"))
    write_baselines(layout.root / "specs" / "baselines" / "child.yaml", "child", {"mini": Measurement((5.0,))})
    assert layout.project().task_from_file(layout.root / "specs/tasks/child.yaml").baseline == {"mini": 5.0}


def test_a_task_that_extends_one_reads_the_file_its_own_spec_names(layout):
    extending(layout, "limits: {max_steps: 5}\nbaseline: {measured: ../baselines/mine.yaml}\n")
    write_baselines(layout.root / "specs" / "baselines" / "mine.yaml", "child", {"mini": Measurement((7.0,))})
    assert layout.task("specs/tasks/child.yaml").baseline == {"mini": 7.0}

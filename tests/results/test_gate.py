"""Regression gate decisions on constructed pairs of sessions."""

from __future__ import annotations

import pytest

from pytest_mlab.errors import MlabError
from pytest_mlab.results.gate import ALL_TASKS, compare, counts, load_reference, missing_groups, render_gate, save_gate
from pytest_mlab.results.store import write_results
from tests.results.builders import run, seeds, write_json


def decide(reference, current, max_drop=0.10):
    rows = compare(counts(reference), current, max_drop)
    return {row.task: row for row in rows}


def test_a_clear_regression_fails_with_its_p_value():
    rows = decide(seeds(8, 8), seeds(1, 8))
    assert rows["digits"].regressed and rows[ALL_TASKS].regressed
    assert rows["digits"].drop == pytest.approx(7 / 8)
    assert rows["digits"].p_value < 0.01
    table = render_gate(list(rows.values()), 0.10)
    assert "REGRESSED" in table and "8/8" in table and "1/8" in table and "-88%" in table
    assert "2 regression(s)" in table


def test_noise_between_small_samples_passes():
    rows = decide(seeds(5, 8), seeds(3, 8))  # a 25-point swing, but p is about 0.3
    assert rows["digits"].drop == pytest.approx(0.25)
    assert rows["digits"].p_value > 0.2
    assert not any(row.regressed for row in rows.values())
    assert "gate: passed" in render_gate(list(rows.values()), 0.10)


def test_a_significant_drop_within_the_tolerance_passes():
    rows = decide(seeds(100, 100), seeds(93, 100), max_drop=0.10)
    assert rows["digits"].p_value < 0.05 and not rows["digits"].regressed


def test_improvement_and_equal_rates_pass():
    assert not decide(seeds(2, 8), seeds(7, 8))["digits"].regressed
    rows = decide(seeds(0, 8), seeds(0, 8))  # all failures on both sides
    assert rows["digits"].drop == 0 and rows["digits"].p_value == 1.0 and not rows["digits"].regressed


def test_lower_is_better_tasks_are_judged_by_success_not_raw_score():
    # a minimize task: lower MAE is success; the gate compares success counts, not scores
    reference = seeds(6, 6, task="house-price", direction="minimize", score=40.0, baseline=50.0)
    current = seeds(0, 6, task="house-price", direction="minimize", score=45.0, baseline=50.0, improvement=0.1)
    rows = decide(reference, current)
    assert rows["house-price"].regressed


def test_zero_runs_on_either_side_decide_nothing(tmp_path):
    gate = write_json(tmp_path / "gate.json", {"kind": "mlab-gate", "version": 1, "groups": [
        {"task": "digits", "agent": "reference", "llm": None, "variant": "mini", "successes": 0, "runs": 0},
        {"task": "cifar10", "agent": "reference", "llm": None, "variant": "mini", "successes": 4, "runs": 4}]})
    reference = load_reference(gate)
    rows = compare(reference, seeds(0, 3), 0.10)
    assert all(not row.regressed for row in rows)
    assert missing_groups(reference, seeds(0, 3)) == [("cifar10", "reference", None, "mini")]
    assert "not run this session: cifar10 / reference / mini" in render_gate(rows, 0.1, missing_groups(reference, seeds(0, 3)))
    assert compare(reference, [], 0.10) == []


def test_gate_file_and_results_json_give_the_same_reference(tmp_path):
    reference = seeds(5, 8) + [run("diabetes", agent="research", llm="gpt-4", success=False)]
    saved = save_gate(tmp_path / "gate" / "main.json", reference)
    results = write_results(tmp_path / "out", reference, {})
    assert load_reference(saved) == load_reference(results) == load_reference(tmp_path / "out") == counts(reference)


@pytest.mark.parametrize("content, message", [
    (None, "no such file; write one with --mlab-save-gate"),
    ("{not json", "not readable JSON"),
    ('{"kind": "something"}', "neither a gate file (--mlab-save-gate) nor a results.json"),
    ('{"kind": "mlab-gate", "groups": [{"task": "x"}]}', "a gate group needs task, agent, llm, variant"),
])
def test_bad_reference_files_say_what_is_wrong(tmp_path, content, message):
    path = tmp_path / "gate.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(MlabError, match="--mlab-compare=") as info:
        load_reference(path)
    assert message in str(info.value)

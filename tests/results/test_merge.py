"""Nothing overwritten: a session's rows join the results already in its folder, and
``pytest-mlab report`` rebuilds one table from several folders' results.json and run folders."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pytest_mlab.cli import main
from pytest_mlab.errors import MlabError
from pytest_mlab.results.merge import newest_by_run_id, rebuilt_results, with_earlier_runs
from pytest_mlab.results.report import write_session_outputs
from pytest_mlab.results.store import render_table, write_results
from tests.results.builders import run, strict, write_trace


def test_a_session_keeps_the_rows_of_earlier_sessions_and_replaces_its_own(tmp_path):
    write_results(tmp_path, [run("digits"), run("diabetes", message="first try")], {"seeds": 1})
    outputs = write_session_outputs(tmp_path, [run("diabetes", message="second try")], {"seeds": 2})
    payload = strict((tmp_path / "results.json").read_text())
    assert sorted((row["task"], row["message"]) for row in payload["runs"]) == [
        ("diabetes", "second try"), ("digits", "accuracy 0.9 vs baseline 0.6: +50.0%, needs > +10%")]
    assert payload["settings"] == {"seeds": 2} and outputs.kept == 1 and outputs.set_aside is None
    assert {group["task"] for group in payload["aggregate"]["groups"]} == {"diabetes", "digits"}
    assert "diabetes" in (tmp_path / "report.html").read_text() and "digits" in (tmp_path / "report.html").read_text()


def test_an_unreadable_results_json_is_set_aside_not_overwritten(tmp_path):
    (tmp_path / "results.json").write_text("{cut short")
    merged = with_earlier_runs(tmp_path, [run()])
    assert [row.run_id for row in merged.runs] == ["digits[mini-reference-s0]"] and merged.kept == 0
    assert merged.set_aside.read_text() == "{cut short" and not (tmp_path / "results.json").exists()


@pytest.mark.parametrize("row", [{"nodeid": "specs/tasks/x.yaml::x[mini-baseline-s0]", "wall_time": 3.0}, "a string"])
def test_a_results_json_with_a_row_that_is_not_a_result_is_set_aside_too(tmp_path, row):
    """A row cut short, or edited by hand, is no reason to lose the session's own results."""
    text = json.dumps({"version": 2, "runs": [row]})
    (tmp_path / "results.json").write_text(text)
    merged = with_earlier_runs(tmp_path, [run()])
    assert [row.run_id for row in merged.runs] == ["digits[mini-reference-s0]"]
    assert merged.set_aside.read_text() == text


def test_results_json_is_strict_json_when_an_improvement_is_not_finite(tmp_path):
    runs = [run("digits", improvement=float("inf"), best_improvement=float("-inf")), run("diabetes", score=float("nan"))]
    path = write_results(tmp_path, runs, {"max_cost": float("inf")})
    with pytest.raises(ValueError, match="not strict JSON"):
        strict('{"improvement": Infinity}')  # the check itself bites
    payload = strict(path.read_text())
    rows = {row["task"]: row for row in payload["runs"]}
    assert rows["digits"]["improvement"] is None and rows["digits"]["best_improvement"] is None
    assert rows["diabetes"]["score"] is None and payload["settings"]["max_cost"] is None


def test_the_newest_row_of_a_run_id_wins():
    old, new, other = run(message="old"), run(message="new"), run("diabetes")
    assert newest_by_run_id([(2.0, new), (1.0, old), (0.5, other)]) == [new, other]
    assert newest_by_run_id([(1.0, old), (1.0, new)]) == [new]  # a tie: the later one given


def test_report_rebuilds_from_the_run_folders_of_several_sessions(tmp_path, capsys):
    first, second, out = tmp_path / "first", tmp_path / "second", tmp_path / "combined"
    write_trace(first, run("digits", message="first session"), session="s1")
    write_trace(first, run("diabetes"), session="s1")
    write_trace(first, run("cifar10"), session="s1", graded=False)  # killed mid-run: no row
    later = run("digits", message="second session")
    write_trace(second, later, session="s2")
    digits = second / "runs" / "digits-mini-reference-s0" / "trace.jsonl"
    _age(first / "runs" / "digits-mini-reference-s0" / "trace.jsonl", by=60.0)

    assert main(["report", str(first), str(second), "--out", str(out)]) == 0

    printed = capsys.readouterr().out
    assert "2 run(s)" in printed and "1 run folder(s) without a result (killed mid-run) left out" in printed
    rows = {row["task"]: row for row in strict((out / "results.json").read_text())["runs"]}
    assert sorted(rows) == ["diabetes", "digits"]
    assert rows["digits"]["message"] == "second session" and rows["digits"]["trace"] == str(digits)
    for name in ("results.csv", "summary.csv", "report.html", "plots/success_rate.png"):
        assert (out / name).is_file(), name


def test_report_prefers_results_json_rows_unless_a_run_folder_is_newer(tmp_path):
    """A resumed row lives in results.json only; a run graded after results.json was written (a
    session killed before its end) lives in its run folder only."""
    out = tmp_path / "out"
    resumed, rerun = run("digits", resumed=True), run("diabetes", message="graded before the kill")
    for row in (resumed, rerun):
        write_trace(out, row, session="s1")
    write_results(out, [resumed, run("diabetes", message="in results.json")], {})
    os.utime(out / "results.json", (1.0, 1.0))
    _age(out / "runs" / "digits-mini-reference-s0" / "trace.jsonl", by=0.0, at=0.5)

    rows = {row.task: row for row in rebuilt_results([out]).runs}
    assert rows["digits"].resumed and rows["diabetes"].message == "graded before the kill"


def test_report_follows_a_results_folder_that_moved(tmp_path):
    before, after = tmp_path / "ci" / "out", tmp_path / "downloaded"
    row = run()
    write_trace(before, row)
    row.run_dir = str(before / "runs" / "digits-mini-reference-s0")
    write_results(before, [row], {})
    shutil.move(before, after)
    (found,) = rebuilt_results([after]).runs
    assert Path(found.run_dir) == after / "runs" / "digits-mini-reference-s0" and Path(found.trace).is_file()


def test_report_names_a_folder_with_nothing_in_it(tmp_path):
    with pytest.raises(MlabError, match="no results.json here and no run folders"):
        rebuilt_results([tmp_path])


def test_the_table_marks_resumed_rows():
    table = render_table([run(resumed=True), run("diabetes", passed=False, failure="below threshold")])
    assert "PASS (resumed)" in table and "FAIL: below threshold" in table and "below threshold (resumed)" not in table


def _age(trace: Path, *, by: float, at: float | None = None) -> None:
    """Rewrite the time of a trace's result record: ``at``, or ``by`` seconds earlier."""
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    records[-1]["t"] = at if at is not None else records[-1]["t"] - by
    trace.write_text("".join(json.dumps(record) + "\n" for record in records))

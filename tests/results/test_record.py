"""What a row says whichever path wrote it (Ctrl-C is never the agent's failure), and that rows
written by earlier versions still load."""

from __future__ import annotations

import json
from dataclasses import replace

from pytest_mlab.results.aggregate import summarize
from pytest_mlab.results.record import RunResult
from tests.results.builders import run


def test_an_interrupted_row_is_an_infrastructure_failure_however_it_was_made():
    graded = run(agent="graded", end_reason="interrupted", failure="interrupted", success=False, passed=False)
    older = RunResult.from_dict({**graded.to_dict(), "infrastructure": False})  # written before the rule
    finished = run(agent="finished")

    assert graded.infrastructure and older.infrastructure and not finished.infrastructure
    assert replace(finished, end_reason="interrupted").infrastructure
    summary = summarize([graded, older, finished])
    assert summary["infrastructure_failures"] == 2 and summary["success_rate_excluding_infrastructure"] == 1.0


def test_rows_written_before_the_papers_fields_still_load_and_aggregate(tmp_path):
    from types import SimpleNamespace

    from pytest_mlab.results.merge import with_earlier_runs
    from pytest_mlab.results.record import JudgedBy
    from pytest_mlab.results.store import load_results

    pinned = run("fathomnet", "baseline", expect="baseline", score=0.0, baseline=1e-10, improvement=-1.0,
                 success=False, message="fathomnet_score 0 vs baseline 1e-10: -100.0% (pinned), the unchanged "
                 "starter must not already beat it by more than +10%")
    measured = run("diabetes", "baseline", expect="baseline", success=False,
                   message="mae 57.16 vs baseline 57.16: +0.0%, the baseline must be reproduced within ±2%")
    older = [{key: value for key, value in row.to_dict().items() if key not in ("baseline_pinned", "log_errors")}
             for row in (pinned, measured, run())]
    (tmp_path / "results.json").write_text(json.dumps({"version": 2, "runs": older}))
    loaded = load_results(tmp_path)["runs"]
    assert [(row.baseline_pinned, row.log_errors) for row in loaded] == [(True, []), (False, []), (False, [])]
    assert len(with_earlier_runs(tmp_path, []).runs) == 3
    assert summarize(loaded)["paper_runs"] == 3
    assert not JudgedBy.from_record({"metric": "m"}).baseline_pinned  # a trace's run record from before
    plan = SimpleNamespace(task=SimpleNamespace(metric=SimpleNamespace(name="m", direction="maximize"), tags=["paper"],
                                                baseline_pinned=frozenset({"mini"})),
                           agent=SimpleNamespace(expect="baseline"), baseline=1e-10, variant="mini")
    assert JudgedBy.of_plan(plan).baseline_pinned
    assert not JudgedBy.of_plan(SimpleNamespace(**{**vars(plan), "variant": "full"})).baseline_pinned

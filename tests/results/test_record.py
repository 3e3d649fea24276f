"""A row says the same of an interrupted run whichever path wrote it: Ctrl-C is never the agent's failure."""

from __future__ import annotations

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

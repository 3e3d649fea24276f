"""Real pytest sub-runs of an LLM-driven agent with the offline providers: the item's outcome,
the trace's ``llm`` records, the totals in results.json and replays of a recorded run."""

from __future__ import annotations

import json

import pytest

from tests.llm.support import (RUN_STARTER, SUBMIT, WRITE_ANSWER, llm_project, llm_records, only_run,
                               run_project, script, steps)


@pytest.fixture
def project(pytester):
    return llm_project(pytester.path)


@pytest.mark.slow
def test_scripted_run_passes_and_records_every_call(pytester, project):
    (project / "demo.yaml").write_text(script(
        RUN_STARTER, dict(WRITE_ANSWER, summarise=True), ("fast", "the starter predicted 10"), SUBMIT))
    result, results = run_project(pytester, project, "--llm=scripted:demo.yaml")
    result.assert_outcomes(passed=1)
    run = only_run(results)
    assert run["llm"] == "scripted:demo.yaml" and "scripted_demo.yaml" in run["run_id"]
    records = llm_records(run["trace"])
    assert [(r["step"], r["role"], r["purpose"]) for r in records] == [
        (1, "main", "next action"), (2, "main", "next action"), (2, "fast", "summarise observation"),
        (3, "main", "next action")]
    assert records[2]["completion"] == "the starter predicted 10"
    assert records[0]["stop"] == ["Observation:"] and records[0]["prompt"].startswith("Task: Predict")
    assert all(r["cost"] == 0 and r["prompt_tokens"] > 0 and r["errors"] == [] for r in records)
    # results.json totals are the sums over the trace's llm records
    assert run["tokens"] == sum(r["prompt_tokens"] + r["completion_tokens"] for r in records)
    assert run["cost"] == sum(r["cost"] for r in records)
    assert [action for action, _ in steps(run["trace"])] == ["Execute Script", "Write File", "Final Answer"]


@pytest.mark.slow
def test_running_out_of_responses_is_a_crash_naming_the_file_and_call(pytester, project):
    (project / "short.yaml").write_text(script(RUN_STARTER))
    result, results = run_project(pytester, project, "--llm=scripted:short.yaml")
    result.assert_outcomes(failed=1)
    run = only_run(results)
    assert run["end_reason"] == "crashed" and run["failure"] == "crashed"
    assert "short.yaml: ran out of scripted responses: call 2" in run["message"]
    assert "Traceback" not in run["message"]
    failed = llm_records(run["trace"])[-1]
    assert failed["completion"] is None and failed["failure"] == "error"


@pytest.mark.slow
def test_scripted_directory_skips_tasks_without_a_file(pytester, project):
    (project / "scripts").mkdir()
    result, results = run_project(pytester, project, "--llm=scripted:scripts", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no scripted responses for task 'toy' in *scripts/ (add toy.yaml there*"])
    (project / "scripts" / "toy.yaml").write_text(script(WRITE_ANSWER, SUBMIT))
    result, results = run_project(pytester, project, "--llm=scripted:scripts")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_replay_reproduces_the_actions_and_the_score(pytester, project):
    (project / "demo.yaml").write_text(script(
        RUN_STARTER, dict(WRITE_ANSWER, summarise=True), ("fast", "summary"), SUBMIT))
    _, results = run_project(pytester, project, "--llm=scripted:demo.yaml", "--mlab-out=first")
    first = only_run(results)
    result, results = run_project(pytester, project, f"--llm=replay:{first['trace']}", "--mlab-out=second")
    result.assert_outcomes(passed=1)
    second = only_run(results)
    assert steps(second["trace"]) == steps(first["trace"])
    assert (second["score"], second["passed"]) == (first["score"], first["passed"]) == (0.0, True)
    assert [r["completion"] for r in llm_records(second["trace"])] == [r["completion"] for r in llm_records(first["trace"])]


@pytest.mark.slow
def test_replay_that_diverges_fails_clearly(pytester, project):
    (project / "demo.yaml").write_text(script(WRITE_ANSWER, SUBMIT))
    _, results = run_project(pytester, project, "--llm=scripted:demo.yaml", "--mlab-out=first")
    trace = only_run(results)["trace"]
    # edit the recorded answer so the replayed agent asks the fast LLM where the recording has a main call
    records = [json.loads(line) for line in open(trace)]
    for record in records:
        if record.get("type") == "llm" and record["step"] == 1:
            record["completion"] = json.dumps(dict(RUN_STARTER, summarise=True))
    with open(trace, "w") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)
    result, results = run_project(pytester, project, f"--llm=replay:{trace}", "--mlab-out=second")
    result.assert_outcomes(failed=1)
    run = only_run(results)
    assert run["end_reason"] == "crashed"
    assert "diverged at call 2" in run["message"] and "role 'main'" in run["message"] and "role 'fast'" in run["message"]

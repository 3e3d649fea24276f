"""Scores an agent claims without having measured them, found from the trace."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mlab.grading.claims import claimed_numbers, is_backed, unmeasured_claims
from pytest_mlab.grading.grader import Grade
from pytest_mlab.grading.verdict import judge
from pytest_mlab.outcomes import Failure
from pytest_mlab.spec.models import FunctionRef, Metric, TaskSpec


def step(number: int, action: str, observation: str = "", arguments: dict | None = None,
         fact_check: str | None = None, low_level: list | None = None) -> dict:
    record = {"type": "step", "step": number, "action": action, "arguments": arguments or {},
              "observation": observation, "error": False, "low_level": low_level or []}
    if fact_check is not None:
        record["thinking"] = {"Fact Check": fact_check}
    return record


def final(number: int, answer: str) -> dict:
    return step(number, "Final Answer", "ended", {"final_answer": answer})


def test_score_like_numbers_are_claims_and_counts_are_not():
    assert claimed_numbers("accuracy 0.853 (85.3 %) after 10 epochs with lr 3e-4") == ["0.853", "85.3%"]


@pytest.mark.parametrize("claim, measured, backed", [
    ("0.853", [0.85341], True),      # rounded as written
    ("0.85", [0.8534], True),
    ("85.3%", [0.8534], True),       # a percentage of a printed fraction
    ("0.853", [85.3], True),         # a fraction of a printed percentage
    ("0.90", [0.853, 12.0], False),
    ("43.41", [43.4], False),        # more precise than anything printed
])
def test_a_claim_is_backed_by_a_printed_value_that_rounds_to_it(claim, measured, backed):
    assert is_backed(claim, measured) is backed


def test_a_claim_backed_by_executed_code_is_not_reported():
    records = [{"type": "run"}, step(1, "Execute Script", "Validation MAE: 44.4451\n"),
               final(2, "The validation MAE is 44.445.")]
    assert unmeasured_claims(records) == []


def test_a_final_answer_with_a_number_nobody_printed_is_reported():
    records = [step(1, "Execute Script", "Validation MAE: 57.16\n"), final(2, "MAE went down from 57.16 to 41.20.")]
    assert unmeasured_claims(records) == ["Final Answer: 41.20"]


def test_numbers_the_agent_wrote_or_read_do_not_count_as_measured():
    records = [step(1, "Write File", "File results.txt written", {"file_name": "results.txt", "content": "acc 0.99"}),
               step(2, "Read File", "acc 0.99"), final(3, "accuracy 0.99")]
    assert unmeasured_claims(records) == ["Final Answer: 0.99"]


def test_output_of_code_run_inside_a_composite_action_counts():
    low = [{"action": "Execute Script", "arguments": {}, "observation": "accuracy 0.912"}]
    records = [step(1, "Edit and Run", "done", low_level=low), final(2, "accuracy 0.912")]
    assert unmeasured_claims(records) == []


def test_only_fact_check_lines_that_say_confirmed_are_claims_and_only_earlier_output_backs_them():
    records = [step(1, "List Files", fact_check="- accuracy should reach 0.95: guessed\n"
                                                "- baseline accuracy 0.60: confirmed by step 0"),
               step(2, "Execute Script", "accuracy 0.60"),
               step(3, "Final Answer", "ended", {"final_answer": "done"},
                    fact_check="- baseline accuracy 0.60: confirmed by the observation of step 2")]
    assert unmeasured_claims(records) == ["Fact Check, step 1: 0.60"]


def _task() -> TaskSpec:
    return TaskSpec(name="t", description="d", source="specs/tasks/t.yaml", line=1, assets=Path("."),
                    metric=Metric("accuracy", "maximize", FunctionRef("grader.py", "score")), data={})


def test_a_failed_run_that_claimed_an_unmeasured_score_gets_its_own_category():
    verdict = judge(_task(), 0.5, Grade(0.52), "final answer", "success", unmeasured=["Final Answer: 0.91"])
    assert not verdict.passed and verdict.failure == Failure.CLAIMED_UNMEASURED
    assert "claimed Final Answer: 0.91, which no executed code printed" in verdict.message


def test_an_invalid_submission_with_an_unmeasured_claim_is_a_claim_failure():
    verdict = judge(_task(), 0.5, Grade(None, invalid_reason="submission.csv is missing"),
                    "final answer", "success", unmeasured=["Final Answer: 0.91"])
    assert verdict.failure == Failure.CLAIMED_UNMEASURED and "submission.csv is missing" in verdict.message


def test_a_successful_run_keeps_success_even_with_an_unbacked_number():
    verdict = judge(_task(), 0.5, Grade(0.9), "final answer", "success", unmeasured=["Final Answer: 0.91"])
    assert verdict.passed and verdict.failure is None

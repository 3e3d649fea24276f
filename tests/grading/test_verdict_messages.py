"""The message of a run cut short reads as a sentence ("the LLM provider failed: ..."), and
`pytest-mlab rescore` gets back the detail it was made from, from new and older messages alike."""

from __future__ import annotations

import json

import pytest

from pytest_mlab.grading.grader import Grade
from pytest_mlab.grading.verdict import cut_short_detail, judge
from pytest_mlab.outcomes import EndReason
from tests.grading.support import task, tiny_task

PROVIDER_DETAIL = "ProviderError: openai/gpt-4 failed 5 times in a row; last error: Timeout: no answer in 300s"


def test_a_provider_error_message_names_the_llm_provider():
    verdict = judge(task(), 0.5, Grade(0.9), "provider error", "success", PROVIDER_DETAIL)
    assert verdict.message == ("the LLM provider failed: ProviderError: openai/gpt-4 failed 5 times in a row; "
                               "last error: Timeout: no answer in 300s")
    assert verdict.failure == "provider error" and not verdict.passed


@pytest.mark.parametrize("end_reason, detail, message", [
    ("crashed", "Traceback...\nRuntimeError: boom\n", "the run crashed: RuntimeError: boom"),
    ("interrupted", "Ctrl-C", "the run was interrupted: Ctrl-C"),
    ("budget spent", "BudgetExhausted: $1.00 spent", "the session's LLM budget ran out: BudgetExhausted: $1.00 spent"),
    ("host lost", "HostLost: gpu-1 is gone", "the sandbox's host stopped answering: HostLost: gpu-1 is gone"),
])
def test_every_end_that_cuts_a_run_short_has_a_sentence(end_reason, detail, message):
    assert judge(task(), 0.5, Grade(0.9), end_reason, "success", detail).message == message


@pytest.mark.parametrize("end_reason", [reason for reason in EndReason if reason.cut_short])
def test_rescore_gets_back_the_detail_the_message_was_made_from(end_reason):
    message = judge(task(), 0.5, Grade(0.9), end_reason, "success", PROVIDER_DETAIL).message
    assert cut_short_detail(message, end_reason) == PROVIDER_DETAIL
    assert cut_short_detail(f"the run {end_reason}: {PROVIDER_DETAIL}", end_reason) == PROVIDER_DETAIL  # saved earlier


@pytest.mark.parametrize("saved", [f"the LLM provider failed: {PROVIDER_DETAIL}",
                                   f"the run provider error: {PROVIDER_DETAIL}"], ids=["now", "before"])
def test_a_rescored_run_keeps_its_message_without_doubling_its_head(tmp_path, saved):
    from pytest_mlab.grading.rescore import regrade_final

    tiny = tiny_task(tmp_path / "run", "import mlab_measure\nmlab_measure.finish(mlab_measure.folders()[1])\n")
    _, snapshot = tiny.snapshot({})
    (tiny.root / "trace.jsonl").write_text(json.dumps({"type": "result", "snapshot": snapshot}) + "\n")
    _, verdict, _ = regrade_final(tiny.task, tiny.root, tiny.data, sandbox="local", label="test-tiny", variant="mini",
                                  end_reason="provider error", expect="success", message=saved)
    assert verdict.message == f"the LLM provider failed: {PROVIDER_DETAIL}"

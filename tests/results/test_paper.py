"""The paper's denominator: which runs the original's plot.py would have counted, and how."""

from __future__ import annotations

import pytest

from pytest_mlab.outcomes import EndReason
from pytest_mlab.results.aggregate import summarize
from pytest_mlab.results.paper import CONNECTION_ERROR, PaperCount, is_gpt4, log_errors, paper_count
from pytest_mlab.results.record import JudgedBy, RunIdentity, RunResult
from pytest_mlab.trace import TraceWriter
from tests.results.builders import run

# After these the original left error.txt or no overall_time.txt; after the others it exited cleanly.
ERRORED = {"timeout", "token limit", "crashed", "provider error", "budget spent", "interrupted", "host lost"}
CLEAN = {"final answer", "step limit", "no final answer", "invalid responses", "workspace limit"}


def ended(reason: str, **changes) -> RunResult:
    """A run that ended by ``reason``, graded a success (the paper's rule may still fail or drop it)."""
    return run(end_reason=reason, **changes)


def test_every_end_reason_has_a_place_in_the_papers_rule():
    assert {reason.value for reason in EndReason} == ERRORED | CLEAN  # a new end reason needs a decision here


@pytest.mark.parametrize("reason", sorted(CLEAN))
def test_a_run_that_ended_cleanly_counts_with_its_own_grade(reason):
    assert paper_count(ended(reason)) == PaperCount(True, True)
    assert paper_count(ended(reason, success=False)).counted


@pytest.mark.parametrize("reason", sorted(ERRORED))
def test_an_errored_run_is_dropped(reason):
    count = paper_count(ended(reason, agent="research", llm="claude-v1"))
    assert (count.counted, count.why) == (False, f"dropped: {reason}")


@pytest.mark.parametrize("agent, llm", [("research", "gpt-4"), ("research-no-retrieval", "openai/gpt-4-0314"),
                                        ("research", "gpt-4-32k")])
def test_the_gpt4_research_agents_keep_their_errored_runs_as_failures(agent, llm):
    # plot.py:232 keeps the errored runs of no_retrieval_gpt4 and full_gpt4_long; their final
    # workspace was never saved, so they score -1: failures, whatever our grader made of it
    count = paper_count(ended("timeout", agent=agent, llm=llm))
    assert (count.counted, count.success, count.why) == (True, False, "counted as failed: timeout")


@pytest.mark.parametrize("agent, llm", [("research", "gpt-4o"), ("research", "claude-3-opus"), ("react", "gpt-4"),
                                        ("research-strict", "gpt-4"), ("baseline", None)])
def test_other_configurations_drop_their_errored_runs(agent, llm):
    assert not paper_count(ended("crashed", agent=agent, llm=llm)).counted


def test_gpt4_is_the_papers_model_not_its_successors():
    assert [is_gpt4(name) for name in ("gpt-4", "GPT-4-0613", "openai/gpt-4", "gpt-4o", "gpt-4.1", "gpt-40", None)] \
        == [True, True, True, False, False, False, False]


def test_an_errored_run_without_a_step_never_reached_the_papers_tables():
    # the original writes trace.json after each step, and eval.py evaluates only runs that have one
    count = paper_count(ended("provider error", agent="research", llm="gpt-4", steps=0))
    assert (count.counted, count.why) == (False, "dropped: provider error before its first step")
    assert paper_count(ended("no final answer", steps=0)).counted  # a clean end writes it anyway


def test_out_of_memory_in_the_logs_drops_a_run_in_every_configuration():
    count = paper_count(run(agent="research", llm="gpt-4", log_errors=["CUDA out of memory"]))
    assert (count.counted, count.why) == (False, "dropped: out of memory in its logs")
    assert not paper_count(run(log_errors=["OpenBLAS blas_thread_init:"])).counted


def test_the_messages_are_looked_for_where_the_original_logged_them(tmp_path):
    trace = tmp_path / "trace.jsonl"
    with TraceWriter(trace) as writer:
        writer.write({"type": "run", "run_id": "x", "message": "CUDA out of memory"})  # not a log of the run
        writer.write({"type": "llm", "prompt": "OpenBLAS blas_thread_init: in a prompt"})  # nor a prompt
        writer.write({"type": "step", "step": 1, "observation": "RuntimeError: CUDA out of memory. Tried to allocate"})
        writer.write({"type": "ended", "reason": "crashed",
                      "detail": "OpenBLAS blas_thread_init: pthread_create failed"})
    assert log_errors(trace) == ["CUDA out of memory", "OpenBLAS blas_thread_init:"]
    quiet = tmp_path / "quiet.jsonl"
    with TraceWriter(quiet) as writer:
        writer.write({"type": "step", "step": 1, "observation": "loss 0.3"})
        writer.write({"type": "llm", "completion": "CUDA out of memory is likely; reduce the batch"})
    assert log_errors(quiet) == []
    assert log_errors(tmp_path / "missing.jsonl") == [] and log_errors(None) == []


def test_a_result_carries_the_messages_of_its_trace(tmp_path):
    trace = tmp_path / "trace.jsonl"
    with TraceWriter(trace) as writer:
        writer.write({"type": "step", "step": 1, "observation": "CUDA out of memory"})
    identity = RunIdentity(nodeid="n", run_id="r", task="t", agent="a", llm=None, seed=0, variant="mini",
                           sandbox="local")
    graded = RunResult.of_run(identity, JudgedBy(), passed=True, score=1.0, improvement=0.5, success=True, valid=True,
                              invalid_reason=None, end_reason=EndReason.FINAL_ANSWER, failure=None, message="",
                              steps=1, wall_time=1.0, run_dir=str(tmp_path), trace=str(trace))
    lost = RunResult.crashed(identity, "its worker died", trace=str(trace), steps=1)
    assert graded.log_errors == lost.log_errors == ["CUDA out of memory"]
    assert RunResult.crashed(identity, "no sandbox").log_errors == []


def test_an_agent_that_prints_the_out_of_memory_message_escapes_only_the_papers_rate(tmp_path):
    """The attack: a failing run prints "CUDA out of memory" so that it leaves the denominator. The
    original's filter drops it, and so does the paper's rate here, which reproduces that filter; our
    own rates, the ones to quote and gate on, still count it as the failure it is."""
    trace = tmp_path / "trace.jsonl"
    with TraceWriter(trace) as writer:
        writer.write({"type": "step", "step": 1, "action": "Execute Script",
                      "observation": "The script has been executed. Here is the output:\nCUDA out of memory (not really)"})
    cheat = run(agent="research", llm="gpt-4", success=False, log_errors=log_errors(trace))
    honest = run(agent="research", llm="gpt-4", success=True)
    numbers = summarize([cheat, honest])
    assert (numbers["paper_runs"], numbers["paper_success_rate"]) == (1, 1.0)
    assert numbers["success_rate"] == 0.5 and numbers["success_rate_excluding_infrastructure"] == 0.5


def test_a_connection_error_in_an_imported_runs_logs_drops_it_except_where_errored_runs_count():
    """plot.py's connection_error (``MLAgentBench/plot.py:82-86``): an imported run of the original
    whose logs show one is dropped, unless its experiment keeps errored runs, where it counts with
    its own grade (it exited cleanly, so eval.py graded it)."""
    claude = ended("final answer", agent="research-no-retrieval", llm="claude-v1", log_errors=[CONNECTION_ERROR])
    assert paper_count(claude) == PaperCount(False, False, "dropped: a connection error in its logs")
    gpt4 = ended("final answer", agent="research-no-retrieval", llm="gpt-4", log_errors=[CONNECTION_ERROR])
    assert paper_count(gpt4) == PaperCount(True, True)

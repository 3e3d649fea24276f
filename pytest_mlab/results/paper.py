"""Which runs the paper's success rate counts, decided the way the original's plot.py decides it.

The paper's numbers come from a filter over log folders, not from a rule about the agent: a run
that left ``error.txt`` (any exception out of the agent, the 5-hour SIGALRM included) or no
``overall_time.txt`` (the process died), or whose logs mention a connection error, is dropped,
except in the two GPT-4 research-agent experiments, which keep their errored runs as failures;
a run whose logs say "CUDA out of memory", or show an MKL or OpenBLAS threading error, is dropped
in every experiment. Our end reasons say which of these the original would have left behind, so
the same filter can be computed from a run's row; docs/fidelity.md gives the mapping and the
lines of the original it rests on.

This is the paper's denominator, kept beside ours (``success_rate_excluding_infrastructure``),
which leaves out only the runs the harness failed: compare the two, quote ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_mlab.outcomes import EndReason

if TYPE_CHECKING:
    from pytest_mlab.results.record import RunResult

# What plot.py looks for in a run's logs, and drops the run for in every experiment.
LOG_ERRORS = {
    "CUDA out of memory": "out of memory",
    "rror: mkl-service + Intel(R) MKL: MKL_THREADING_LAYER=INTEL is incompatible with libgomp-a34b3233.so.1 library.":
        "MKL threading error",
    "OpenBLAS blas_thread_init:": "OpenBLAS threading error",
}
#: What an imported run's row says when its logs show what plot.py's connection_error looks for
#: (``MLAgentBench/plot.py:82-86``): dropped, except in the experiments that keep errored runs.
#: Our own runs say the same with the ``provider error`` end.
CONNECTION_ERROR = "connection error"
_MARKERS = tuple((marker, marker.encode("utf-8")) for marker in LOG_ERRORS)
_LOGGED = (b'"type": "step"', b'"type": "ended"')  # the trace's records that hold what main_log and log held

# Ends after which the original left error.txt, or no overall_time.txt: an exception out of the
# agent (its crash, the SIGALRM time-out, a prompt too long for the agent's own model, a
# provider that kept failing, Ctrl-C), or a process that died with its machine.
ERRORED_ENDS = frozenset(reason.value for reason in (
    EndReason.TIME_LIMIT, EndReason.TOKEN_LIMIT, EndReason.CRASHED, EndReason.PROVIDER_ERROR, EndReason.BUDGET_SPENT,
    EndReason.INTERRUPTED, EndReason.HOST_LOST))

# plot.py keeps the errored runs of ``no_retrieval_gpt4`` and ``full_gpt4_long``: the research
# agent without and with its research log, on GPT-4. Our agents of those two configurations:
KEEPS_ERRORED_AGENTS = frozenset({"research-no-retrieval", "research"})


@dataclass(frozen=True)
class PaperCount:
    """How the paper's rule counts one run: ``counted`` in the denominator, and as a success or
    not; ``why``: the reason it is dropped, or counted as failed whatever its grade, else None."""

    counted: bool
    success: bool
    why: str | None = None


def is_gpt4(llm: str | None) -> bool:
    """The paper's GPT-4 (gpt-4-0314): ``gpt-4`` or a dated or sized ``gpt-4-...``, with or without
    a provider prefix; not gpt-4o or gpt-4.1, which are other models."""
    if not llm:
        return False
    name = llm.rsplit("/", 1)[-1].lower()
    return name == "gpt-4" or name.startswith("gpt-4-")


def keeps_errored_runs(agent: str, llm: str | None) -> bool:
    """The configurations whose errored runs plot.py counts as failures instead of dropping them."""
    return agent in KEEPS_ERRORED_AGENTS and is_gpt4(llm)


def paper_count(run: "RunResult") -> PaperCount:
    """The paper's verdict on one run (see the module's docstring)."""
    found = [LOG_ERRORS[marker] for marker in LOG_ERRORS if marker in (run.log_errors or ())]
    if found:
        return PaperCount(False, False, f"dropped: {found[0]} in its logs")
    if str(run.end_reason) not in ERRORED_ENDS:
        if CONNECTION_ERROR in (run.log_errors or ()) and not keeps_errored_runs(run.agent, run.llm):
            return PaperCount(False, False, "dropped: a connection error in its logs")
        return PaperCount(True, bool(run.success))
    if not run.steps:  # the original writes trace.json after a step, and evaluates only runs that have one
        return PaperCount(False, False, f"dropped: {run.end_reason} before its first step")
    if keeps_errored_runs(run.agent, run.llm):  # kept, and failed: the final workspace was never saved
        return PaperCount(True, False, f"counted as failed: {run.end_reason}")
    return PaperCount(False, False, f"dropped: {run.end_reason}")


def log_errors(trace: Path | str | None) -> list[str]:
    """The messages of :data:`LOG_ERRORS` that a run's steps or end show (observations, thinking,
    arguments, the crash's traceback: what the original's main_log and log held). Lines are
    searched as bytes and parsed only when one holds a message, so a long trace costs one read;
    an unreadable or missing trace shows none."""
    found: set[str] = set()
    if not trace:
        return []
    try:
        with open(trace, "rb") as reader:
            for line in reader:
                if any(tag in line for tag in _LOGGED):
                    found.update(marker for marker, raw in _MARKERS if raw in line)
    except OSError:
        return []
    return [marker for marker in LOG_ERRORS if marker in found]

"""The words for how a run ends and why it failed: one vocabulary for the trace, grading and results.

Both are string enums, so they compare equal to, and serialise as, the plain strings that
results.json, results.csv and the trace have always held (``"step limit"``, ``"invalid
submission"``); readers of saved results need no change.
"""

from __future__ import annotations

from enum import Enum


class _Word(str, Enum):
    """A string enum that prints as its value (what ``enum.StrEnum`` does from Python 3.11 on)."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class EndReason(_Word):
    """Why the agent's run stopped, as the Environment and the runner record it."""

    FINAL_ANSWER = "final answer"
    STEP_LIMIT = "step limit"
    TIME_LIMIT = "timeout"
    TOKEN_LIMIT = "token limit"
    NO_FINAL_ANSWER = "no final answer"
    INVALID_RESPONSES = "invalid responses"  # the agent's model gave no usable response, however often asked
    CRASHED = "crashed"
    PROVIDER_ERROR = "provider error"  # the LLM provider failed for good (rate limits, 5xx, connection, time-outs)
    BUDGET_SPENT = "budget spent"  # the session's --mlab-max-cost ran out during the run
    INTERRUPTED = "interrupted"
    HOST_LOST = "host lost"  # the machine running the sandbox (a docker host) stopped answering
    WORKSPACE_LIMIT = "workspace limit"  # the agent's workspace went beyond its depth, entry or byte limits

    @property
    def is_limit(self) -> bool:
        """The run was stopped by one of its limits (or stopped acting) before it answered."""
        return self in LIMIT_ENDS

    @property
    def cut_short(self) -> bool:
        """The run did not end on its own terms: its workspace says nothing reliable about the agent."""
        return self in (EndReason.CRASHED, EndReason.INTERRUPTED, EndReason.PROVIDER_ERROR, EndReason.BUDGET_SPENT,
                        EndReason.HOST_LOST)

    @property
    def harness_failed(self) -> bool:
        """The harness or its LLM provider stopped the run, not the agent: left out of the paper's
        success denominator and run again by --mlab-resume."""
        return self in (EndReason.PROVIDER_ERROR, EndReason.BUDGET_SPENT, EndReason.HOST_LOST)


LIMIT_ENDS = frozenset({EndReason.STEP_LIMIT, EndReason.TIME_LIMIT, EndReason.TOKEN_LIMIT, EndReason.NO_FINAL_ANSWER,
                        EndReason.INVALID_RESPONSES})


class Failure(_Word):
    """The failure category of a run that did not do what its item asserts."""

    CRASHED = "crashed"
    INTERRUPTED = "interrupted"
    STEP_LIMIT = "step limit"
    TIME_LIMIT = "timeout"
    TOKEN_LIMIT = "token limit"
    NO_FINAL_ANSWER = "no final answer"
    INVALID_RESPONSES = "invalid responses"
    PROVIDER_ERROR = "provider error"
    BUDGET_SPENT = "budget spent"
    HOST_LOST = "host lost"
    WORKSPACE_LIMIT = "workspace limit"  # the agent's own failure: its workspace is not snapshotted or graded
    INVALID_SUBMISSION = "invalid submission"
    GRADER_ERROR = "grader error"  # the task's grader crashed: the harness failed, not the agent
    NO_BASELINE = "no baseline"
    BASELINE_MISMATCH = "baseline mismatch"
    BELOW_THRESHOLD = "below threshold"
    CLAIMED_UNMEASURED = "claimed but unmeasured"

    @classmethod
    def of_end(cls, reason: str) -> "Failure":
        """The category of a run whose end itself is the failure (a crash, a limit)."""
        return cls(EndReason(reason).value)


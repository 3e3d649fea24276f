"""The arithmetic of timed tasks: the submission's CPU time relative to the unchanged starter's.

The measure step (:mod:`.measure`) runs the unchanged starter, the submission and an overhead
execution (interpreter and library start-up only, no agent code) in ``timing.repeats`` rounds, a
fixed number, interleaved in a rotating order, each in a fresh sandbox, and records the CPU
seconds the sandbox's cgroup (or the kernel, at reaping) counted for each. No lock keeps the
machine quiet meanwhile: other work on the machine runs on, and the score is built to hold
under it:

    relative time = (mean(submission) - mean(overhead)) / (mean(starter) - mean(overhead))

1.0 for the starter itself, lower is better; with every side timed the same number of times this
is the ratio of their sums. Why means, not each side's fastest execution: under load the same
execution's CPU seconds spread widely (cold caches after each switch, shared memory bandwidth, a
virtual machine's stolen time), and the minimum of three draws is itself a noisy order statistic:
one lucky execution of one side moves the score by the whole spread. Measured on the 2-core
machine beside two busy processes and other work (bench/timing_stability.py, the unchanged
starter graded against itself, 3 rounds, load average 4 to 20), llama-inference's executions took
10.8 to 18.4 CPU seconds; over 20 gradings the ratio of minimums scored 0.76 to 1.39 (standard
deviation 0.169, 2 outside the tolerance of 0.25) and the ratio of means, from the same
executions, 0.81 to 1.15 (0.114, none outside). For vectorization the two spread alike (0.10 and
0.12 over 10 gradings of the original batch, 0.13 and 0.13 over 20 of the mini batch, at a load
average of 12 to 22).
The numerator is at least :data:`MIN_WORK_S`: an execution that differs from the
start-up by less than that is below what the measurement can resolve, and must not divide into
~0 or a negative number by chance. The number of rounds is fixed (``timing.repeats``): no round
is added when the times disagree, so a grading's cost is known in advance.

A submission slower than :data:`SLOW_BOUND` times the starter is not measured again: when its
first execution used more than SLOW_BOUND times the starter's CPU seconds, or did not finish
within SLOW_BOUND times the starter's wall-clock seconds (plus :data:`SLOW_GRACE_S`), the
measurement stops there and the relative time is SLOW_BOUND; a relative time measured in full
is capped there too, so a slower submission never scores better than a less slow one (the CPU
test compares whole executions, start-up included, so it stops only submissions whose work is
beyond the bound). It cannot gain from this: the
bound is a score four times worse than the starter's, and its code never runs in the starter's
sandbox (the starter's first execution comes before any of the submission's). The cost of a
grading is thus bounded by the starter's: a slow submission costs one starter execution and
one execution of at most SLOW_BOUND starter times (plus the grace); any other, ``repeats``
rounds of at most 1 + SLOW_BOUND starter times plus start-up.

Work on a GPU is not in the CPU count. When the unchanged starter's executions say their work ran
on a GPU (``on_gpu`` in their result.json; no agent code runs in them, so they decide), the
wall-clock seconds of every execution replace the CPU seconds, in the same formula: the
harness's own clock around each whole execution (``ExecResult.duration``), from the sandbox's
start of the process to its end. Every output must be on the host's side of the process before
it ends, so the GPU's work is inside that span; nothing the measured process does or reports
can shorten it. A time the process measures itself (CUDA events, a stopwatch) is never read: the
agent's code runs in that process and could replace any clock or object in it. The cost of
this: the span holds start-up and loading the model too, in the submission's and the starter's
executions alike, and the start-up execution subtracts only the imports, so on a GPU the
relative time is pulled towards 1.0 by loading (docs/fidelity.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.errors import GradingError, InvalidSubmission
from pytest_mlab.grading.measured import OVERHEAD, STARTER, SUBMISSION, TIMING_FILE, executions, finite_positive
from pytest_mlab.in_sandbox.mlab_measure import ON_GPU

#: Smallest CPU time (seconds) the submission's own work counts as: below the start-up noise.
MIN_WORK_S = 0.01
#: The relative time of a submission too slow to measure further (see the module's docstring).
SLOW_BOUND = 4.0
#: Seconds added to SLOW_BOUND times the starter's wall-clock time before a submission's
#: execution is stopped as slow: start-up and sandbox set-up vary more than the work does.
SLOW_GRACE_S = 10.0


@dataclass(frozen=True)
class Timing:
    """Seconds of every timed execution (CPU, or wall-clock on a GPU), as the harness measured them,
    round by round;
    ``slow``: the submission passed :data:`SLOW_BOUND` and was measured once."""

    repeats: int
    submission: tuple[float, ...]
    starter: tuple[float, ...]
    overhead: tuple[float, ...]
    slow: bool = False

    @property
    def relative(self) -> float:
        """The submission's mean time over the starter's, the mean start-up subtracted from both,
        at most :data:`SLOW_BOUND`."""
        if self.slow:
            return SLOW_BOUND
        start_up = _mean(self.overhead)
        work = max(_mean(self.submission) - start_up, MIN_WORK_S)
        starter_work = _mean(self.starter) - start_up
        if starter_work <= 0:
            raise GradingError(f"the unchanged starter took no more time than start-up alone "
                               f"(starter {_mean(self.starter):.3f} s, start-up {start_up:.3f} s on average): "
                               f"the task's measure script does not time the starter's work")
        return min(work / starter_work, SLOW_BOUND)


def _mean(values: tuple[float, ...]) -> float:
    return sum(values) / len(values)


def read_timing(measured: Path, what: str) -> Timing:
    """The timing of a measure step, checked: every repeat of each execution ran and reported a
    possible CPU time. A failed or impossible submission execution makes the submission invalid
    (``what`` names what was timed, for the message); a failed starter or overhead execution is
    a grading error."""
    record = json.loads((Path(measured) / TIMING_FILE).read_text(encoding="utf-8"))
    repeats = int(record["repeats"])
    if not record.get("complete", False):
        _raise_first_failure(measured, what)
        raise GradingError(f"the measure step stopped before timing every execution: {record.get('stopped')}")
    if record.get("slow"):  # one execution of the submission, beyond the bound: nothing to divide
        return Timing(repeats, (), (), (), slow=True)
    on_gpu = starter_ran_on_gpu(measured)
    kind = "wall-clock time" if on_gpu else "CPU time"
    values: dict[str, tuple[float, ...]] = {}
    for name in (SUBMISSION, STARTER, OVERHEAD):
        times = ((record.get("wall_seconds") or {}) if on_gpu else record).get(name) or []
        if len(times) != repeats:
            raise GradingError(f"the measure step timed the {name} {len(times)} times, not {repeats}")
        if None in times:
            raise GradingError(f"the sandbox reported no {kind} for the {name}: this backend cannot time "
                               f"measurements here")
        values[name] = _durations(name, times, what, kind, "measured")
    return Timing(repeats, values[SUBMISSION], values[STARTER], values[OVERHEAD])


def starter_ran_on_gpu(measured: Path) -> bool:
    """Whether the unchanged starter's executions so far say their work ran on a GPU; what the
    submission's executions say is never read."""
    return any((execution.result() or {}).get(ON_GPU) is True for execution in executions(measured, STARTER))


def _durations(name: str, times: list, what: str, kind: str, how: str) -> tuple[float, ...]:
    """``times`` of the executions of ``name``, each a possible duration, else the submission is
    invalid (``what`` names what was timed) or the grading broken."""
    bad = [value for value in times if not finite_positive(value)]
    if bad and name == SUBMISSION:
        raise InvalidSubmission(f"{what}: impossible {kind} {bad[0]!r} s {how}; the submission is not scored")
    if bad:
        raise GradingError(f"impossible {kind} {bad[0]!r} s {how} for the {name}")
    return tuple(float(value) for value in times)


def relative_time(measured: Path, what: str) -> float:
    """The timed task's score: see the module's docstring."""
    return read_timing(measured, what).relative


def _raise_first_failure(measured: Path, what: str) -> None:
    """When measuring stopped at a failed execution: say which and why."""
    for name in (SUBMISSION, STARTER, OVERHEAD):
        for execution in executions(measured, name):
            if execution.timed_out or execution.returncode != 0 or execution.truncated_reason:
                message = execution.failure(f"the {name} execution {execution.index + 1}")
                if name == SUBMISSION:
                    raise InvalidSubmission(f"{what}: {message}")
                timed = "the unchanged starter" if name == STARTER else "start-up alone (the overhead execution)"
                raise GradingError(f"timing {timed} failed: {message}")

"""The arithmetic of timed tasks: the submission's CPU time relative to the unchanged starter's.

The measure step (:mod:`.measure`) runs the submission, the starter and an overhead execution
(interpreter and library start-up only, no agent code) ``repeats`` times, interleaved, each in a
fresh sandbox, and records the CPU seconds the sandbox counted for each. The score is

    relative time = (min(submission) - min(overhead)) / (min(starter) - min(overhead))

1.0 for the starter itself, lower is better. Minimums, because noise only ever adds time. The
numerator is at least :data:`MIN_WORK_S`: an execution that differs from the start-up by less
than that is below what the measurement can resolve, and must not divide into ~0 or a negative
number by chance.

A minimum seen once can be the only quiet moment one side had while other work came and went on
the machine; the other side's minimum then holds noise, and the ratio is off by as much (the
unchanged starter, timed against itself on a loaded 2-core machine, once scored 1.35 in three
rounds). When the task allows more rounds (``timing.max_repeats``), rounds are added after
``timing.repeats`` until the measurement :attr:`Timing.settled`: each subject's two fastest times
agree within :data:`AGREEMENT` of the starter's work. An idle machine stops at ``repeats``.

Work on a GPU is not in the CPU count. When the unchanged starter's executions report the
wall-clock seconds of their GPU work (:data:`GPU_SECONDS`, measured by the measure script with
the GPU synchronised; no agent code runs in them, so they decide), those seconds replace the CPU
times of the submission and the starter, with nothing to subtract: they cover the timed calls
only, so the measure step skips the start-up executions once the first starter has reported. The
submission's own report comes from the process its code ran in (see
:mod:`pytest_mlab.in_sandbox.mlab_measure`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.errors import GradingError, InvalidSubmission
from pytest_mlab.grading.measured import OVERHEAD, STARTER, SUBMISSION, executions, finite_positive

#: The measure step's record of a timed measurement (in ``measured/``; a run keeps a copy in its folder).
TIMING_FILE = "timing.json"
#: Smallest CPU time (seconds) the submission's own work counts as: below the start-up noise.
MIN_WORK_S = 0.01
#: The key of result.json for the seconds a measure script timed on a GPU (mlab_measure.Stopwatch).
GPU_SECONDS = "gpu_seconds"
#: How close each subject's two fastest times must be, as a share of the starter's work, for a
#: measurement to be settled: the ratio then moves by a few percent at most with more rounds.
AGREEMENT = 0.05


@dataclass(frozen=True)
class Timing:
    """CPU seconds of every timed execution, as the harness measured them."""

    repeats: int
    submission: tuple[float, ...]
    starter: tuple[float, ...]
    overhead: tuple[float, ...]

    @property
    def relative(self) -> float:
        """The submission's time over the starter's, start-up subtracted from both."""
        start_up = min(self.overhead)
        work = max(min(self.submission) - start_up, MIN_WORK_S)
        starter_work = min(self.starter) - start_up
        if starter_work <= 0:
            raise GradingError(f"the unchanged starter took no more CPU time than start-up alone "
                               f"(starter {min(self.starter):.3f} s, start-up {start_up:.3f} s): "
                               f"the task's measure script does not time the starter's work")
        return work / starter_work

    @property
    def settled(self) -> bool:
        """Whether each subject's fastest time was seen twice, within :data:`AGREEMENT` of the
        starter's work: a minimum seen only once may be one side's only quiet moment."""
        starter_work = min(self.starter) - min(self.overhead)
        if starter_work <= 0:
            return False
        return all(len(times) >= 2 and sorted(times)[1] - sorted(times)[0] <= AGREEMENT * starter_work
                   for times in (self.submission, self.starter, self.overhead))


def measured_enough(measured: Path, cpu_seconds: dict[str, list[float | None]]) -> bool:
    """Whether the rounds so far settle the measurement (see :attr:`Timing.settled`), read as
    :func:`read_timing` reads a finished one (GPU seconds where the starter reports them). Times
    that cannot be used also end it: more rounds would not change what grading says of them."""
    try:
        values = {name: _durations(name, list(cpu_seconds[name]), "the submission", "CPU time", "measured")
                  for name in (SUBMISSION, STARTER, OVERHEAD)}
        gpu = _gpu_seconds(measured, "the submission")
    except (GradingError, InvalidSubmission):
        return True
    return _timing(values, gpu).settled


def _timing(cpu: dict[str, tuple[float, ...]], gpu: dict[str, tuple[float, ...]] | None) -> Timing:
    """The executions' times as compared: the GPU seconds where the starter reports them, with
    nothing subtracted; otherwise the CPU seconds."""
    if gpu is not None:
        rounds = len(gpu[STARTER])
        return Timing(rounds, gpu[SUBMISSION], gpu[STARTER], (0.0,) * rounds)
    return Timing(len(cpu[STARTER]), cpu[SUBMISSION], cpu[STARTER], cpu[OVERHEAD])


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
    on_gpu = starter_reports_gpu_seconds(measured)
    values: dict[str, tuple[float, ...]] = {}
    for name in (SUBMISSION, STARTER) if on_gpu else (SUBMISSION, STARTER, OVERHEAD):
        times = record.get(name) or []
        if len(times) != repeats:
            raise GradingError(f"the measure step timed the {name} {len(times)} times, not {repeats}")
        if None in times:
            raise GradingError(f"the sandbox reported no CPU time for the {name}: this backend cannot time "
                               f"measurements here")
        values[name] = _durations(name, times, what, "CPU time", "measured")
    return _timing(values, _gpu_seconds(measured, what))


def starter_reports_gpu_seconds(measured: Path) -> bool:
    """Whether the unchanged starter's executions so far report GPU seconds: its work ran on a GPU."""
    return any(GPU_SECONDS in (execution.result() or {}) for execution in executions(measured, STARTER))


def _gpu_seconds(measured: Path, what: str) -> dict[str, tuple[float, ...]] | None:
    """The GPU seconds every execution reported, when the starter's did (see the module's
    docstring); None when the starter's report none: the work ran on the CPU."""
    if not starter_reports_gpu_seconds(measured):
        return None
    return {name: _durations(name, [(execution.result() or {}).get(GPU_SECONDS) for execution in
                                    executions(measured, name)], what, "GPU time", "reported")
            for name in (SUBMISSION, STARTER)}


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

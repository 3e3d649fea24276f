"""What a task's measure script needs: the harness copies this file next to it into the sandbox.

A measure script runs inside the run's sandbox, where this package is not importable, so this
module uses the standard library only and is imported by its copy's name::

    import mlab_measure
    inputs, out = mlab_measure.folders()
    mlab_measure.single_thread()            # before numpy / torch are imported
    import numpy as np
    if mlab_measure.overhead_phase():       # the timing baseline: imports only, no agent code
        mlab_measure.finish(out)
    try:
        train = mlab_measure.import_workspace("train")
    except BaseException:
        mlab_measure.failure(out, "import", "train.py")

Everything the script reports is plain data in ``out``: ``result.json`` (written by
:func:`finish`) and the files the script saves. Code of the agent runs in the same process and
could write these files too, or replace anything this module holds; the grader on the host
therefore checks them strictly and never trusts them for anything the agent could gain from:
no time this process reports is ever read. Timing, on a CPU and on a GPU alike, is measured by
the harness from outside the process (see :mod:`pytest_mlab.grading.timing`).

Test inputs that the agent must not know ahead are drawn at grading: :func:`grading_seed` is a
fresh random number for each grading, the same for every execution of that grading (so the
submission's outputs can be compared with the unchanged starter's on the same inputs), passed
to this process only and recorded by the harness after grading.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback

RESULT = "result.json"
FAILED = 1  # exit status after :func:`failure`: a timed measurement stops there
PHASE_VARIABLE = "MLAB_MEASURE_PHASE"
SEED_VARIABLE = "MLAB_MEASURE_SEED"
#: The key of result.json by which a measure script says its work ran on a GPU; only the unchanged
#: starter's executions are believed (:func:`pytest_mlab.grading.timing.starter_ran_on_gpu`).
ON_GPU = "on_gpu"
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                     "VECLIB_MAXIMUM_THREADS")


def folders() -> tuple[str, str]:
    """(inputs folder, output folder), as the harness passes them: ``SCRIPT INPUTS OUT``."""
    if len(sys.argv) != 3:
        sys.exit(f"usage: python {os.path.basename(sys.argv[0])} INPUTS OUT")
    return sys.argv[1], sys.argv[2]


def overhead_phase() -> bool:
    """Whether this process only measures start-up (imports) for the timing baseline."""
    return os.environ.get(PHASE_VARIABLE, "run") == "overhead"


def single_thread() -> None:
    """One thread for numerical libraries, as the task's timing promises (set before importing them)."""
    for name in _THREAD_VARIABLES:
        os.environ[name] = "1"


def import_workspace(name: str):
    """Import the workspace's module ``name`` (the working directory), ahead of anything else."""
    sys.path.insert(0, os.getcwd())
    return importlib.import_module(name)


def grading_seed() -> int:
    """The seed of this grading's test inputs: drawn by the harness when the grading began, unknown
    to the agent until then, the same for every execution of the grading."""
    value = os.environ.get(SEED_VARIABLE, "")
    if not value.isdigit():
        sys.exit(f"{SEED_VARIABLE} is not set: the harness passes the grading's seed to measure scripts")
    return int(value)


def finish(out: str, **result) -> None:
    """Write ``result.json`` and end the process (status 0)."""
    _end(out, result, 0)


def _end(out: str, result: dict, status: int) -> None:
    """Write ``result.json`` and end the process at once: threads or exit handlers the agent's
    code left cannot change the result after it is written, nor keep the process alive."""
    with open(os.path.join(out, RESULT), "w", encoding="utf-8") as handle:
        json.dump(result, handle)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def reject(out: str, stage: str, detail: str = "") -> None:
    """Report a failure at ``stage`` that raised nothing (a missing name, a wrong type)."""
    _end(out, {"error": stage, "detail": detail[-2000:]}, FAILED)


def failure(out: str, stage: str, source: str) -> None:
    """Report the exception being handled as a failure at ``stage``, naming the line of
    ``source`` (the agent's file) where it was raised, and end the process with :data:`FAILED`."""
    kind, error, tb = sys.exc_info()
    detail = f"{kind.__name__}: {error}".rstrip(": ") if kind is not None else "unknown error"
    lines = [frame.lineno for frame in traceback.extract_tb(tb) if os.path.basename(frame.filename) == source]
    if lines and not isinstance(error, SyntaxError):
        detail += f" (at {source} line {lines[-1]})"
    traceback.print_exc()  # the full traceback goes to the output tail the grader may quote
    reject(out, stage, detail)

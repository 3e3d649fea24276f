"""Grader for the vectorization task: how fast Conv2DLayer.forward of the workspace's train.py is,
relative to the unchanged starter's, and whether it still computes the same output.

The agent's code never runs here. The measure step (measure.py, in the run's sandbox) imports
train.py, builds the layer with a kernel and bias drawn from the grading's seed and calls
forward once on a batch drawn from it, in a fresh process and sandbox for each of
``timing.repeats`` repeats, interleaved with the unchanged starter's train.py (on the same draw)
and with start-up alone; the harness counts each process's CPU seconds from outside. This
grader reads what came back as plain data: the output of EVERY repeat must match the unchanged
starter's output on the same inputs, otherwise the submission is rejected. The seed is new at
each grading, so outputs remembered from any earlier draw (seed 0's, say) do not match. Score:
the relative time of pytest_mlab.grading.timing (1.0 = the starter's speed, lower is better).

CPU time of one thread (BLAS limited to one thread) rather than wall-clock time: it barely
moves when other work shares the machine, so the recorded baseline holds under `pytest -n`.
The self-reported time in submission.csv is ignored.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from pytest_mlab.task_api import InvalidSubmission, relative_time, saved_arrays, starter_array

RTOL = 1e-5
ATOL = 1e-5


def _layer_call(config: dict) -> str:
    return (f"Conv2DLayer({config['batch_shape'][3]}, {config['num_filters']}, {config['kernel_size']}, "
            f"{config['stride']}, {config['padding']}, {config['activation']!r})")


def _stages(call: str) -> dict[str, str]:
    """What went wrong at each stage of the measurement, as its messages say it."""
    return {
        "import": "importing the module raised",
        "no_class": "defines no class Conv2DLayer; the grader builds the layer from it",
        "init": f"{call} (then setting .kernel_matrices and .biases) raised",
        "forward": "Conv2DLayer.forward raised",
        "output": "Conv2DLayer.forward must return a numeric numpy array; converting its result raised",
    }


def _check_output(output: np.ndarray, expected: np.ndarray, where: str) -> None:
    if output.shape != expected.shape:
        raise InvalidSubmission(
            f"forward output differs from the original loops' output{where}: shape {output.shape}, "
            f"expected {expected.shape} (batch, new_height, new_width, num_filters)")
    output = output.astype(np.float64)
    close = np.isclose(output, expected, rtol=RTOL, atol=ATOL)
    if not close.all():
        bad = int((~close).sum())
        worst = np.unravel_index(int(np.argmax(np.abs(np.nan_to_num(output - expected, nan=np.inf)))), output.shape)
        raise InvalidSubmission(
            f"forward output differs from the original loops' output{where}: {bad} of {output.size} values are off "
            f"(e.g. at index {tuple(int(i) for i in worst)}: got {float(output[worst]):.6g}, expected "
            f"{float(expected[worst]):.6g}; tolerance rtol={RTOL}, atol={ATOL}); a faster forward must compute the "
            f"same values as the loops, on any inputs, every time it is called")


def score(workspace: pathlib.Path, answers: pathlib.Path, measured: pathlib.Path) -> float:
    workspace, answers, measured = pathlib.Path(workspace), pathlib.Path(answers), pathlib.Path(measured)
    if not (workspace / "train.py").is_file():
        raise InvalidSubmission("train.py: file not found in the workspace; the grader imports Conv2DLayer from it")
    config = json.loads((answers / "conv_config.json").read_text(encoding="utf-8"))
    expected = starter_array(measured).astype(np.float64)  # the original loops, on this grading's draw
    call = _layer_call(config)
    what = (f"the measurement process (import train, {call}, one forward call on a "
            f"{tuple(config['batch_shape'])} batch)")
    for output, where in saved_arrays(measured, source="train.py", what=what, stages=_stages(call),
                                      label="train.py: Conv2DLayer.forward", unit="call"):
        _check_output(output, expected, where)
    return relative_time(measured, "train.py")

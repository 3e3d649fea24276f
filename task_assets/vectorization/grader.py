"""Grader for the vectorization task: time Conv2DLayer.forward from the workspace's train.py.

The self-reported time in submission.csv is ignored. A fresh Python process imports ``train``
from the workspace (its ``main()`` is not run), builds the layer with the hidden kernel and bias,
runs ``forward`` on the hidden batch a few times and reports the least CPU time. The
output of the first call must match the hidden expected output, otherwise the submission is
rejected. Score: CPU seconds of the fastest forward call (lower is better).

CPU time of one thread (BLAS limited to one thread) rather than wall-clock time: it barely
moves when other work shares the machine, so the recorded baseline holds under `pytest -n`.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

from pytest_mlab.grading import InvalidSubmission

REPEATS = 3
TIMEOUT_S = 300
RTOL = 1e-5
ATOL = 1e-5

# Runs inside the workspace (cwd), so ``import train`` finds the agent's train.py first.
_RUNNER = r'''
import json, sys, time, traceback
clock = time.process_time  # bound before train.py is imported, so train.py cannot replace it

case_path, output_path, result_path, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def finish(**result):
    with open(result_path, "w") as handle:
        json.dump(result, handle)
    sys.exit(0)

def failure(stage):
    kind, error, tb = sys.exc_info()
    detail = f"{kind.__name__}: {error}".rstrip(": ")
    lines = [frame.lineno for frame in traceback.extract_tb(tb) if frame.filename.endswith("train.py")]
    if lines and not isinstance(error, SyntaxError):
        detail += f" (at train.py line {lines[-1]})"
    finish(error=stage, detail=detail)

import numpy as np
case = np.load(case_path)
config = json.loads(str(case["config"]))
args = (config["batch_shape"][3], config["num_filters"], config["kernel_size"],
        config["stride"], config["padding"], config["activation"])
try:
    import train
except BaseException:
    failure("import")
layer_class = getattr(train, "Conv2DLayer", None)
if layer_class is None:
    finish(error="no_class", detail="")
try:
    layer = layer_class(*args)
    layer.kernel_matrices = case["kernel"].copy()
    layer.biases = case["bias"].copy()
except BaseException:
    failure("init")
times = []
for attempt in range(repeats):
    features = case["features"].copy()
    try:
        start = clock()
        output = layer.forward(features)
        times.append(clock() - start)
    except BaseException:
        failure("forward")
    if attempt == 0:
        try:
            output = np.asarray(output, dtype=np.float64)
        except BaseException:
            failure("output")
        np.save(output_path, output, allow_pickle=False)
finish(times=times, args=list(args))
'''


def _layer_call(config: dict) -> str:
    return (f"Conv2DLayer({config['batch_shape'][3]}, {config['num_filters']}, {config['kernel_size']}, "
            f"{config['stride']}, {config['padding']}, {config['activation']!r})")


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    workspace, answers = pathlib.Path(workspace), pathlib.Path(answers)
    if not (workspace / "train.py").is_file():
        raise InvalidSubmission("train.py: file not found in the workspace; the grader imports Conv2DLayer from it")
    case_path = answers / "conv_case.npz"
    with np.load(case_path) as case:
        inputs = {key: case[key] for key in ("features", "kernel", "bias", "config")}
        expected = case["expected"]
    config = json.loads(str(inputs["config"]))
    call = _layer_call(config)

    with tempfile.TemporaryDirectory(prefix="mlab-vectorization-") as tmp:
        # The timing process (which runs the agent's code) gets the inputs only, never the answers.
        inputs_path = pathlib.Path(tmp, "inputs.npz")
        np.savez(inputs_path, **inputs)
        output_path = pathlib.Path(tmp, "output.npy")
        result_path = pathlib.Path(tmp, "result.json")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
        try:
            completed = subprocess.run(
                [sys.executable, "-c", _RUNNER, str(inputs_path), str(output_path),
                 str(result_path), str(REPEATS)],
                cwd=workspace, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise InvalidSubmission(
                f"train.py: {REPEATS} calls of Conv2DLayer.forward on a {tuple(config['batch_shape'])} batch "
                f"did not finish within {TIMEOUT_S} s") from None
        if not result_path.is_file():
            tail = (completed.stderr or completed.stdout or "").strip()[-1500:]
            raise InvalidSubmission(
                f"train.py: the timing process exited with status {completed.returncode} before reporting a "
                f"result (train.py ended the process or it crashed); output: {tail or '(none)'}")
        result = json.loads(result_path.read_text())

        error, detail = result.get("error"), result.get("detail", "")
        if error == "import":
            raise InvalidSubmission(f"train.py: importing the module raised {detail}")
        if error == "no_class":
            raise InvalidSubmission("train.py: defines no class Conv2DLayer; the grader builds the layer from it")
        if error == "init":
            raise InvalidSubmission(
                f"train.py: {call} (then setting .kernel_matrices and .biases) raised {detail}")
        if error == "forward":
            raise InvalidSubmission(f"train.py: Conv2DLayer.forward raised {detail}")
        if error == "output":
            raise InvalidSubmission(
                f"train.py: Conv2DLayer.forward must return a numeric numpy array; converting its result "
                f"raised {detail}")
        output = np.load(output_path, allow_pickle=False)

    if output.shape != expected.shape:
        raise InvalidSubmission(
            f"forward output differs from the reference convolution: shape {output.shape}, "
            f"expected {expected.shape} (batch, new_height, new_width, num_filters)")
    close = np.isclose(output, expected, rtol=RTOL, atol=ATOL)
    if not close.all():
        bad = int((~close).sum())
        worst = np.unravel_index(int(np.argmax(np.abs(np.nan_to_num(output - expected, nan=np.inf)))), output.shape)
        raise InvalidSubmission(
            f"forward output differs from the reference convolution: {bad} of {output.size} values are off "
            f"(e.g. at index {tuple(int(i) for i in worst)}: got {float(output[worst]):.6g}, expected {float(expected[worst]):.6g}; "
            f"tolerance rtol={RTOL}, atol={ATOL}); a faster forward must compute the same values as the loops")
    return float(min(result["times"]))

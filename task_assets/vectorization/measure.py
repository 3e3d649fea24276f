"""Measure step of the vectorization task. Runs INSIDE the run's sandbox, never in the grader.

Phase "run": load the hidden inputs, import train.py from the workspace, build Conv2DLayer with
the hidden kernel and bias, call forward once on the hidden batch, and save its output
(out/output.npy, float64, no pickles) for the grader to compare with the expected output.
Phase "overhead": the same imports, nothing else; no code of the workspace runs.

The harness times each whole process from outside (CPU seconds, as the sandbox counts them) and
subtracts the overhead process's time; nothing this process or train.py reports is a time.
"""

import os

import mlab_measure

inputs, out = mlab_measure.folders()
mlab_measure.single_thread()

import json  # noqa: E402  (after the thread settings)

import numpy as np  # noqa: E402

if mlab_measure.overhead_phase():
    mlab_measure.finish(out)

with np.load(os.path.join(inputs, "conv_inputs.npz"), allow_pickle=False) as case:
    features, kernel, bias = case["features"], case["kernel"], case["bias"]
    config = json.loads(str(case["config"]))
args = (config["batch_shape"][3], config["num_filters"], config["kernel_size"], config["stride"], config["padding"],
        config["activation"])

try:
    train = mlab_measure.import_workspace("train")
except BaseException:
    mlab_measure.failure(out, "import", "train.py")
layer_class = getattr(train, "Conv2DLayer", None)
if layer_class is None:
    mlab_measure.reject(out, "no_class")
try:
    layer = layer_class(*args)
    layer.kernel_matrices = kernel.copy()
    layer.biases = bias.copy()
except BaseException:
    mlab_measure.failure(out, "init", "train.py")
try:
    output = layer.forward(features.copy())
except BaseException:
    mlab_measure.failure(out, "forward", "train.py")
try:
    output = np.asarray(output, dtype=np.float64)
except BaseException:
    mlab_measure.failure(out, "output", "train.py")
np.save(os.path.join(out, "output.npy"), output, allow_pickle=False)
mlab_measure.finish(out)

"""Measure step of the vectorization task. Runs INSIDE the run's sandbox, never in the grader.

Phase "run": read the layer's configuration (the hidden conv_config.json), draw the batch, the
kernel and the bias from the grading's seed (fresh for each grading, the same for the starter's
and the submission's executions), import train.py from the workspace, build Conv2DLayer with
that kernel and bias, call forward once on that batch, and save its output (out/output.npy,
float64, no pickles) for the grader to compare with the unchanged starter's.
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

with open(os.path.join(inputs, "conv_config.json"), encoding="utf-8") as handle:
    config = json.load(handle)
rng = np.random.default_rng(mlab_measure.grading_seed())  # before any code of the workspace runs
features = rng.standard_normal(config["batch_shape"])
kernel = rng.standard_normal((config["kernel_size"], config["kernel_size"], config["batch_shape"][3],
                              config["num_filters"]))
bias = rng.standard_normal((1, 1, 1, config["num_filters"]))
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

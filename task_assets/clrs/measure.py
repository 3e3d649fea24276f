"""Measure step of the CLRS task. Runs INSIDE the run's sandbox, never in the grader.

Loads the workspace's checkpoints/params.npz (no pickles) and model.py, calls
``model.predict(params, inputs)`` on the hidden test graphs' INPUTS (input_pos, input_A,
input_adj; the true pointers are not here, they stay with the grader on the host) and saves the
prediction as out/predicted.npy (no pickles) for the grader to score.
"""

import os

import mlab_measure

CHECKPOINT = "checkpoints/params.npz"
INPUTS = ("input_pos", "input_A", "input_adj")

inputs, out = mlab_measure.folders()

import numpy as np  # noqa: E402

with np.load(os.path.join(inputs, "floyd_warshall_test_inputs.npz"), allow_pickle=False) as data:
    test_inputs = {name: data[name] for name in INPUTS}

if not os.path.isfile(CHECKPOINT):
    mlab_measure.reject(out, "no_checkpoint")
try:
    with np.load(CHECKPOINT, allow_pickle=False) as data:
        params = {name: data[name] for name in data.files}
except BaseException:
    mlab_measure.failure(out, "checkpoint", "model.py")
if not os.path.isfile("model.py"):
    mlab_measure.reject(out, "no_model")
try:
    model = mlab_measure.import_workspace("model")
except BaseException:
    mlab_measure.failure(out, "import", "model.py")
if not callable(getattr(model, "predict", None)):
    mlab_measure.reject(out, "no_predict")
try:
    predicted = np.asarray(model.predict(params, test_inputs))
except BaseException:
    mlab_measure.failure(out, "predict", "model.py")
try:
    np.save(os.path.join(out, "predicted.npy"), predicted, allow_pickle=False)
except BaseException:
    mlab_measure.failure(out, "output", "model.py")
mlab_measure.finish(out)

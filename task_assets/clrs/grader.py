"""Grader for the CLRS task: the test score of the submitted checkpoint on hidden Floyd-Warshall graphs.

The submission is the workspace's model.py plus the parameters train.py saved in
checkpoints/params.npz. The agent's code never runs here: the measure step (measure.py, in the
run's sandbox) loads the parameters, imports model.py and calls ``model.predict(params, inputs)``
on the inputs of the hidden test graphs (larger than the training graphs), and saves the
prediction as plain data. This grader scores the predicted predecessor pointers as CLRS does
for pointer outputs: the fraction of entries Pi[i, j] predicted right. The true pointers never
leave this process.
"""

from __future__ import annotations

import pathlib

import numpy as np

from pytest_mlab.grading import InvalidSubmission
from pytest_mlab.grading.measured import executions, load_array

CHECKPOINT = "checkpoints/params.npz"
MODEL = "model.py"


def _stage_error(result: dict) -> str | None:
    detail = result.get("detail", "")
    return {
        "no_checkpoint": f"{CHECKPOINT}: not found in the workspace; train.py must save the model's parameters "
                         f"there with numpy.savez",
        "checkpoint": f"{CHECKPOINT}: cannot be read as a numpy .npz archive without pickles ({detail})",
        "no_model": f"{MODEL}: not found in the workspace; the grader calls its predict(params, inputs)",
        "import": f"{MODEL}: importing it failed: {detail}",
        "no_predict": f"{MODEL}: has no function predict(params, inputs)",
        "predict": f"{MODEL}: predict(params, inputs) failed with the parameters in {CHECKPOINT}: {detail}",
        "output": f"{MODEL}: predict must return an array of integer node indices; saving it failed: {detail}",
    }.get(result.get("error"))


def score(workspace: pathlib.Path, answers: pathlib.Path, measured: pathlib.Path) -> float:
    with np.load(pathlib.Path(answers) / "floyd_warshall_test.npz") as data:
        truth = data["output_Pi"]
    (run,) = executions(pathlib.Path(measured))
    result = run.result()
    if result is None:
        raise InvalidSubmission(f"{MODEL}: " + run.failure("loading the checkpoint and calling predict"))
    message = _stage_error(result)
    if message:
        raise InvalidSubmission(message)
    predicted = load_array(run.out / "predicted.npy", f"{MODEL}: predict")
    if predicted.shape != truth.shape:
        raise InvalidSubmission(f"{MODEL}: predict returned shape {predicted.shape}; expected {truth.shape} "
                                f"(batch, nodes, nodes): one predecessor index per pair (i, j)")
    n = truth.shape[-1]
    if not np.issubdtype(predicted.dtype, np.integer) or predicted.min() < 0 or predicted.max() >= n:
        raise InvalidSubmission(f"{MODEL}: predict must return integer node indices 0..{n - 1}")
    return float(np.mean(predicted == truth))

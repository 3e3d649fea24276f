"""Grader for the CLRS task: the test score of the submitted checkpoint on hidden Floyd-Warshall graphs.

The submission is the workspace's model.py plus the parameters train.py saved in
checkpoints/params.npz. The grader imports model.py, loads the parameters, calls
``model.predict(params, inputs)`` on the hidden test graphs (larger than the training graphs)
and scores the predicted predecessor pointers as CLRS does for pointer outputs: the fraction of
entries Pi[i, j] predicted right.
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import numpy as np

from pytest_mlab.grading import InvalidSubmission

CHECKPOINT = "checkpoints/params.npz"
MODEL = "model.py"
INPUTS = ("input_pos", "input_A", "input_adj")


def _load_model(workspace: pathlib.Path):
    path = workspace / MODEL
    if not path.is_file():
        raise InvalidSubmission(f"{MODEL}: not found in the workspace; the grader calls its predict(params, inputs)")
    spec = importlib.util.spec_from_file_location("submitted_clrs_model", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(workspace))
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the submission's own code failed
        raise InvalidSubmission(f"{MODEL}: importing it failed: {type(error).__name__}: {error}") from None
    finally:
        sys.path.remove(str(workspace))
    if not callable(getattr(module, "predict", None)):
        raise InvalidSubmission(f"{MODEL}: has no function predict(params, inputs)")
    return module


def _load_params(workspace: pathlib.Path) -> dict:
    path = workspace / CHECKPOINT
    if not path.is_file():
        raise InvalidSubmission(f"{CHECKPOINT}: not found in the workspace; train.py must save the model's "
                                f"parameters there with numpy.savez")
    try:
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except (OSError, ValueError) as error:
        raise InvalidSubmission(f"{CHECKPOINT}: cannot be read as a numpy .npz archive ({error})") from None


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    workspace = pathlib.Path(workspace)
    with np.load(pathlib.Path(answers) / "floyd_warshall_test.npz") as data:
        test = {name: data[name] for name in data.files}
    model, params = _load_model(workspace), _load_params(workspace)
    truth = test["output_Pi"]
    try:
        predicted = np.asarray(model.predict(params, {name: test[name] for name in INPUTS}))
    except Exception as error:
        raise InvalidSubmission(f"{MODEL}: predict(params, inputs) failed with the parameters in {CHECKPOINT}: "
                                f"{type(error).__name__}: {error}") from None
    if predicted.shape != truth.shape:
        raise InvalidSubmission(f"{MODEL}: predict returned shape {predicted.shape}; expected {truth.shape} "
                                f"(batch, nodes, nodes): one predecessor index per pair (i, j)")
    n = truth.shape[-1]
    if not np.issubdtype(predicted.dtype, np.integer) or predicted.min() < 0 or predicted.max() >= n:
        raise InvalidSubmission(f"{MODEL}: predict must return integer node indices 0..{n - 1}")
    return float(np.mean(predicted == truth))

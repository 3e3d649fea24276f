"""Grader for the CLRS task: the test score of checkpoints/best.pkl on CLRS-30's hidden Floyd-Warshall graphs.

The submission is what the original evaluates: the BaselineModel of the workspace's baselines.py,
rebuilt from checkpoints/spec_list.pkl and model_params.pkl and restored from best.pkl. That
happens in the run's sandbox (measure.py), on the test graphs' inputs alone; the predicted
pointers come back as plain data. This grader scores them as CLRS scores a pointer output (the
original's score): the fraction of entries Pi[i, j] predicted right. The true pointers never
leave this process.
"""

from __future__ import annotations

import pathlib

import numpy as np

from pytest_mlab.task_api import InvalidSubmission, executions, load_array

CHECKPOINTS = "checkpoints"
MODEL = "baselines.py"


def _stage_error(result: dict) -> str | None:
    detail = result.get("detail", "")
    return {
        "missing": f"{CHECKPOINTS}/{detail}: not found in the workspace; train.py writes best.pkl, spec_list.pkl "
                   f"and model_params.pkl there, and the grader needs all three",
        "clrs": f"the clrs package cannot be imported in the sandbox ({detail}); install dm-clrs==2.0.0",
        "import": f"{MODEL}: importing it failed: {detail}",
        "params": f"{CHECKPOINTS}/spec_list.pkl or model_params.pkl cannot be read as train.py writes them "
                  f"(model_params['processor_factory'] must stay a tuple (processor_type, use_ln, nb_triplet_fts, "
                  f"nb_heads)): {detail}",
        "restore": f"BaselineModel of {MODEL} cannot be built from the saved spec_list.pkl and model_params.pkl "
                   f"and restored from {CHECKPOINTS}/best.pkl: {detail}",
        "predict": f"BaselineModel.predict of {MODEL} failed on the test graphs: {detail}",
        "output": f"BaselineModel.predict of {MODEL} must return the pointers Pi as node indices; saving them "
                  f"failed: {detail}",
    }.get(result.get("error"))


def score(workspace: pathlib.Path, answers: pathlib.Path, measured: pathlib.Path) -> float:
    with np.load(pathlib.Path(answers) / "floyd_warshall_test.npz") as data:
        truth = data["output_Pi"].astype(np.int64)  # CLRS stores pointers as floats
    (run,) = executions(pathlib.Path(measured))
    result = run.result()
    if result is None:
        raise InvalidSubmission(f"{MODEL}: " + run.failure("restoring checkpoints/best.pkl and predicting the test graphs"))
    message = _stage_error(result)
    if message:
        raise InvalidSubmission(message)
    predicted = load_array(run.out / "predicted.npy", f"{MODEL}: predict")
    if predicted.shape != truth.shape:
        raise InvalidSubmission(f"{MODEL}: BaselineModel.predict returned Pi of shape {predicted.shape}; expected "
                                f"{truth.shape} (graphs, nodes, nodes): one predecessor index per pair (i, j)")
    n = truth.shape[-1]
    numeric = np.issubdtype(predicted.dtype, np.integer) or np.issubdtype(predicted.dtype, np.floating)
    if not numeric or not np.all(np.isfinite(predicted)) or np.any(predicted != np.round(predicted)) \
            or predicted.min() < 0 or predicted.max() >= n:
        raise InvalidSubmission(f"{MODEL}: BaselineModel.predict must return Pi as node indices 0..{n - 1}")
    return float(np.mean(predicted == truth))

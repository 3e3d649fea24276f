"""Grader for the digits task: accuracy of the most probable class in submission.csv.

submission.csv has one row per test image: ``id`` and one probability column per class
``0`` .. ``9``. Rows are matched to the hidden labels by ``id`` (their order does not matter);
the predicted class is the column with the largest probability. The submission is rejected
with a message naming the problem when the file is missing or unreadable, a column is missing
or unexpected, the ids do not match test.npz exactly once each, or a probability is not a
finite non-negative number.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import InvalidSubmission, read_submission

SUBMISSION = "submission.csv"
ID = "id"
CLASSES = [str(c) for c in range(10)]
COLUMNS = [ID] + CLASSES


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv").set_index(ID)["label"].astype("int64")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, COLUMNS, truth.index, "test.npz")
    probabilities = submission[CLASSES].to_numpy()
    negative = (probabilities < 0).any(axis=1)
    if negative.any():
        row = int(np.argmax(negative))
        column = CLASSES[int(np.argmax(probabilities[row] < 0))]
        raise InvalidSubmission(
            f"{SUBMISSION}: probabilities must be non-negative; {int(negative.sum())} row"
            f"{'s have' if negative.sum() > 1 else ' has'} a negative value (e.g. id {submission.index[row]}, "
            f"column '{column}': {probabilities[row, int(column)]:.6g}); write softmax outputs, not logits")
    predicted = probabilities.argmax(axis=1)
    return float(np.mean(predicted == truth.to_numpy()))

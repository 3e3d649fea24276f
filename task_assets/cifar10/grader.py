"""Grader for the cifar10 task: accuracy of the most probable class in submission.csv.

submission.csv has one row per image of test_batch: ``id`` (its row in test_batch) and one
probability column per class ``0`` .. ``9``. Rows are matched to the hidden labels by id.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.grading import InvalidSubmission
from pytest_mlab.grading.submission import read_submission

SUBMISSION = "submission.csv"
CLASSES = [str(c) for c in range(10)]


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv").set_index("id")["label"].astype("int64")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, ["id"] + CLASSES, truth.index,
                                 "cifar-10-batches-py/test_batch")
    probabilities = submission[CLASSES].to_numpy()
    if (probabilities < 0).any():
        rows = np.flatnonzero((probabilities < 0).any(axis=1))
        raise InvalidSubmission(f"{SUBMISSION}: probabilities must be non-negative; {len(rows)} row(s) have a "
                                f"negative value (e.g. id {submission.index[rows[0]]}); write softmax outputs, "
                                f"not logits")
    return float(np.mean(probabilities.argmax(axis=1) == truth.to_numpy()))

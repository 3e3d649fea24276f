"""Grader for the imdb task: accuracy of the more probable class in submission.csv.

submission.csv has one row per review of imdb/test.parquet: ``idx`` and the probabilities of
class ``0`` (negative) and ``1`` (positive). Rows are matched to the hidden labels by ``idx``,
never by position. Missing, extra or duplicate ids, missing columns, non-numeric, NaN or
negative probabilities make the submission invalid, with a message saying which.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.grading import InvalidSubmission
from pytest_mlab.grading.submission import read_submission

SUBMISSION = "submission.csv"
ID = "idx"
CLASSES = ["0", "1"]


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv").set_index(ID)["label"].astype("int64")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, [ID, *CLASSES], truth.index,
                                 "imdb/test.parquet", id_column=ID)
    probabilities = submission[CLASSES].to_numpy()
    negative = np.flatnonzero((probabilities < 0).any(axis=1))
    if len(negative):
        raise InvalidSubmission(
            f"{SUBMISSION}: probabilities must be non-negative; {len(negative)} row(s) have a negative value "
            f"(e.g. idx {submission.index[negative[0]]}); write softmax outputs, not logits")
    return float(np.mean(probabilities.argmax(axis=1) == truth.to_numpy()))

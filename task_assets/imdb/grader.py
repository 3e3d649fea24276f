"""Grader for the imdb task: accuracy of each row's larger column in submission.csv.

submission.csv has one row per review of the test split: ``idx`` (the review's position in
imdb/test.parquet) and one number per class, ``0`` (negative) and ``1`` (positive). Only which
of the two is larger counts, so probabilities and raw logits score the same. Rows are matched to
the hidden labels by ``idx``, never by position in the file. Missing, extra or duplicate ids,
missing columns, and non-numeric, NaN or infinite values make the submission invalid, with a
message saying which.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import read_submission

SUBMISSION = "submission.csv"
ID = "idx"
CLASSES = ["0", "1"]


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv").set_index(ID)["label"].astype("int64")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, [ID, *CLASSES], truth.index,
                                 "imdb/test.parquet", id_column=ID)
    return float(np.mean(submission[CLASSES].to_numpy().argmax(axis=1) == truth.to_numpy()))

"""Grader for the diabetes task: mean absolute error of submission.csv against the hidden targets.

Rows are matched by ``id`` (their order does not matter). The submission is rejected with a
message naming the problem when the file is missing or unreadable, a column is missing or
unexpected, the ids do not match test.csv exactly once each, or a prediction is not a finite number.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import read_submission

SUBMISSION = "submission.csv"
ID = "id"
TARGET = "target"
COLUMNS = [ID, TARGET]


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv").set_index(ID)[TARGET].astype("float64")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, COLUMNS, truth.index, "test.csv")
    return float(np.mean(np.abs(submission[TARGET].to_numpy() - truth.to_numpy())))

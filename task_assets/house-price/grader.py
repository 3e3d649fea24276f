"""Grader for the house-price task: mean absolute error of the predicted SalePrice, in dollars.

Rows are matched by ``Id`` (their order does not matter). The submission is rejected with a
message naming the problem when the file is missing or unreadable, a column is missing or
unexpected, the Ids do not match test.csv exactly once each, or a price is not a finite number.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import read_submission

ID, TARGET = "Id", "SalePrice"


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv").set_index(ID)[TARGET].astype("float64")
    submission = read_submission(pathlib.Path(workspace) / "submission.csv", [ID, TARGET], truth.index, "test.csv",
                                 id_column=ID)
    return float(np.mean(np.abs(submission[TARGET].to_numpy() - truth.to_numpy())))

"""Grader for the spaceship-titanic task: accuracy of the predicted Transported flags.

Rows are matched by ``PassengerId`` (their order does not matter). The submission is rejected
with a message naming the problem when the file is missing or unreadable, a column is missing or
unexpected, the ids do not match test.csv exactly once each, or a prediction is not True/False.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import read_submission

ID, TARGET = "PassengerId", "Transported"


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv", dtype={ID: str}).set_index(ID)[TARGET]
    submission = read_submission(pathlib.Path(workspace) / "submission.csv", [ID, TARGET], truth.index, "test.csv",
                                 id_column=ID, text_ids=True, boolean=(TARGET,))
    return float(np.mean(submission[TARGET].to_numpy() == truth.astype(float).to_numpy()))

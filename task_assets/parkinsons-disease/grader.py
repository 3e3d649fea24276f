"""Grader for the parkinsons-disease task: SMAPE+1 over the predictions that have a true rating.

The competition's metric: SMAPE (in percent) between the predicted and the true UPDRS ratings,
both plus one, so that a true 0 predicted as 0 counts as exact. Rows are matched by
``prediction_id``. The submission must hold one rating for every prediction_id of the test
files' sample_submission.csv (MockApi writes exactly that); ids whose future visit did not
happen have no true rating and do not count.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import InvalidSubmission, read_submission

ID, TARGET = "prediction_id", "rating"


def smape_plus_one(truth: np.ndarray, predicted: np.ndarray) -> float:
    truth, predicted = truth + 1.0, predicted + 1.0
    return float(100 * np.mean(2 * np.abs(predicted - truth) / (np.abs(truth) + np.abs(predicted))))


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    answers, workspace = pathlib.Path(answers), pathlib.Path(workspace)
    truth = pd.read_csv(answers / "answers.csv").set_index(ID)[TARGET].astype("float64")
    expected = pd.read_csv(answers / "expected_ids.csv")[ID]
    submission = read_submission(workspace / "submission.csv", [ID, TARGET], pd.Index(expected),
                                 "example_test_files/sample_submission.csv", id_column=ID, text_ids=True)
    predicted = submission.loc[truth.index, TARGET].to_numpy()
    if (predicted < 0).any():
        raise InvalidSubmission("submission.csv: ratings must not be negative (UPDRS scores start at 0)")
    return smape_plus_one(truth.to_numpy(), predicted)

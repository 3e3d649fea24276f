"""Grader for the feedback task: MCRMSE, the mean over the six scores of the root mean squared error.

Rows are matched by ``text_id`` (their order does not matter). The submission is rejected with
a message naming the problem when the file is missing or unreadable, a column is missing or
unexpected, the ids do not match test.csv exactly once each, or a score is not a finite number.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import read_submission

ID = "text_id"
SCORES = ["cohesion", "syntax", "vocabulary", "phraseology", "grammar", "conventions"]


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv", dtype={ID: str}).set_index(ID)[SCORES]
    submission = read_submission(pathlib.Path(workspace) / "submission.csv", [ID] + SCORES, truth.index, "test.csv",
                                 id_column=ID, text_ids=True)
    errors = submission[SCORES].to_numpy() - truth.to_numpy(dtype="float64")
    return float(np.mean(np.sqrt(np.mean(errors ** 2, axis=0))))

"""Grader for the ogbn-arxiv task: accuracy of the predicted subject area of the test papers.

submission.csv has one row per test node (split/time/test.csv.gz): ``id`` (node index) and
``label`` (an integer class). Rows are matched to the hidden labels by id. An integer outside
0..39 is simply wrong, as OGB's evaluator counts it: the starter's model has 172 outputs.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import InvalidSubmission, read_submission

SUBMISSION = "submission.csv"


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv").set_index("id")["label"].astype("int64")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, ["id", "label"], truth.index,
                                 "networks/ogbn_arxiv/split/time/test.csv.gz")
    predicted = submission["label"].to_numpy()
    fractional = predicted % 1 != 0
    if fractional.any():
        row = int(np.argmax(fractional))
        raise InvalidSubmission(f"{SUBMISSION}: column 'label' must hold integer class indices; "
                                f"{int(fractional.sum())} row(s) do not (e.g. id {submission.index[row]}: "
                                f"{predicted[row]:g})")
    return float(np.mean(predicted.astype(np.int64) == truth.to_numpy()))

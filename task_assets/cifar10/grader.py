"""Grader for the cifar10 task: accuracy of the highest-scoring class in submission.csv.

submission.csv has one row per image of test_batch: ``id`` (its row in test_batch) and one
column per class ``0`` .. ``9``. Rows are matched to the hidden labels by id. Only each row's
largest column counts, so probabilities and raw logits score alike, as in the original.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import read_submission

SUBMISSION = "submission.csv"
CLASSES = [str(c) for c in range(10)]


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv").set_index("id")["label"].astype("int64")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, ["id"] + CLASSES, truth.index,
                                 "data/cifar-10-batches-py/test_batch")
    return float(np.mean(submission[CLASSES].to_numpy().argmax(axis=1) == truth.to_numpy()))

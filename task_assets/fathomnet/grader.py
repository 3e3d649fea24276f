"""Grader for the fathomnet task: the competition's score, the mean of the rescaled AUC of the
out-of-sample predictions and the MAP@20 of the category predictions.

submission.csv has one row per evaluation image (object_detection/eval.json): ``id`` (the image
id), ``categories`` (space-separated category ids, most likely first; at most the first 20 count)
and ``osd`` (a score that the image is out of sample; higher = more likely). Rows are matched by id.

    score = (sAUC + MAP@20) / 2,   sAUC = 2 * AUC(osd) - 1

This is the competition's metric (its metric.py) on integer category ids. When every hidden
image is in sample, as in the full variant (its held-out images are training images), AUC is
undefined (the competition's metric raises an error) and the score is MAP@20 alone: osd cannot
tell submissions apart then, and leaving the term out keeps 1 the best score.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.grading import InvalidSubmission
from pytest_mlab.grading.submission import read_submission

SUBMISSION = "submission.csv"
K = 20


def parse_categories(text: str, image_id: str) -> list[int]:
    try:
        return [int(token) for token in text.split()]
    except ValueError:
        raise InvalidSubmission(f"{SUBMISSION}: image {image_id}: column 'categories' must hold space-separated "
                                f"integer category ids (e.g. '1 17 42'); found {text[:60]!r}") from None


def average_precision(actual: set[int], predicted: list[int], k: int = K) -> float:
    """AP@k as the competition computes it: repeated predictions count once."""
    if not actual:
        return 0.0
    hits, total, seen = 0, 0.0, set()
    for rank, category in enumerate(predicted[:k], start=1):
        if category in actual and category not in seen:
            hits += 1
            total += hits / rank
        seen.add(category)
    return total / min(len(actual), k)


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    from sklearn.metrics import roc_auc_score

    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv", dtype={"id": str, "categories": str},
                        keep_default_na=False).set_index("id")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, ["id", "categories", "osd"], truth.index,
                                 "object_detection/eval.json", text_ids=True, text_columns=("categories",))
    precisions = [average_precision({int(c) for c in truth.loc[i, "categories"].split()},
                                    parse_categories(submission.loc[i, "categories"], i)) for i in truth.index]
    map_at_k = float(np.mean(precisions))
    out_of_sample = truth["osd"].to_numpy()
    if len(set(out_of_sample)) < 2:
        return map_at_k
    auc = roc_auc_score(out_of_sample, submission["osd"].to_numpy())
    return float((2 * auc - 1 + map_at_k) / 2)

"""The FathomNet 2023 score, as evaluation_details.txt defines it: the mean of the rescaled AUC of
the out-of-sample scores and the MAP@20 of the category lists. The test set is scored with this
code. Use it on your own validation split, e.g.

    import metric
    metric.score(solution, submission, row_id_column_name="id")

where both DataFrames have the columns id, categories and osd (in ``solution``, osd is 1 for an
out-of-sample image and 0 otherwise). Category lists may be written as "1 146 10" or as a list
such as "[1.0, 146.0]" (the form of multilabel_classification/train.csv).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

K = 20
_SEPARATORS = re.compile(r"[\s,\[\]]+")


class MetricError(ValueError):
    """A submission the metric cannot score; the message says why."""


def category_ids(text) -> list[int]:
    """The category ids of one cell, in order; an empty or missing cell has none."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return []
    ids = []
    for token in _SEPARATORS.split(str(text).strip()):
        if not token:
            continue
        try:
            value = float(token)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value != int(value):
            raise MetricError(f"categories must be integer category ids separated by spaces (e.g. '1 146 10'); "
                              f"found {token!r} in {str(text)[:60]!r}")
        ids.append(int(value))
    return ids


def apk(actual, predicted, k: int = K) -> float:
    """Average precision at k. Only the first k predictions count, and a category already
    predicted is skipped when it comes again; the sum is divided by min(len(actual), k)."""
    actual = set(actual)
    if not actual:
        return 0.0
    hits, total, seen = 0, 0.0, set()
    for rank, category in enumerate(list(predicted)[:k], start=1):
        if category in actual and category not in seen:
            hits += 1
            total += hits / rank
        seen.add(category)
    return total / min(len(actual), k)


def mapk(actual, predicted, k: int = K) -> float:
    """Mean of :func:`apk` over images (pairs of true and predicted category lists)."""
    return float(np.mean([apk(a, p, k) for a, p in zip(actual, predicted)]))


def rescaled_auc(out_of_sample, osd) -> float:
    """sAUC = 2 * AUC - 1: 1 for a perfect ranking, 0 for a random one, -1 for a reversed one.

    When every image is in sample (or every one out of sample) no ranking can be judged and the
    AUC is undefined; sAUC is then 0, the value an uninformative osd column gets."""
    truth = np.asarray(out_of_sample, dtype=float)
    if len(np.unique(truth)) < 2:
        return 0.0
    return float(2 * roc_auc_score(truth, np.asarray(osd, dtype=float)) - 1)


def score(solution: pd.DataFrame, submission: pd.DataFrame, row_id_column_name: str,
          out_of_sample_column_name: str = "osd", k: int = K) -> float:
    """(sAUC + MAP@k) / 2 of ``submission`` against ``solution``, rows matched by id."""
    columns = [row_id_column_name, "categories", out_of_sample_column_name]
    for name, frame in (("solution", solution), ("submission", submission)):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise MetricError(f"{name} is missing column(s) {', '.join(missing)}")
    truth = solution.set_index(solution[row_id_column_name].astype(str))
    guess = submission.set_index(submission[row_id_column_name].astype(str))
    if guess.index.has_duplicates or truth.index.has_duplicates or set(guess.index) != set(truth.index):
        raise MetricError("the submission's ids must be exactly the solution's ids, each once")
    guess = guess.loc[truth.index]
    try:
        osd = guess[out_of_sample_column_name].astype(float).to_numpy()
    except (TypeError, ValueError):
        raise MetricError(f"column {out_of_sample_column_name} must hold numbers") from None
    if not np.isfinite(osd).all():
        raise MetricError(f"column {out_of_sample_column_name} must hold finite numbers (no empty cells or NaN)")
    predicted = []
    for row_id, text in guess["categories"].items():
        try:
            predicted.append(category_ids(text))
        except MetricError as error:
            raise MetricError(f"id {row_id}: {error}") from None
    actual = [category_ids(text) for text in truth["categories"]]
    return 0.5 * (rescaled_auc(truth[out_of_sample_column_name], osd) + mapk(actual, predicted, k))

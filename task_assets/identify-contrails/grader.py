"""Grader for the identify-contrails task: global Dice coefficient of the predicted contrail masks.

submission.csv has one row per test record: ``record_id`` and ``encoded_pixels``, the
competition's run-length encoding of the predicted mask ('start length' pairs, 1-based, pixels
numbered top to bottom then left to right; '-' for no contrail). Rows are matched by record_id.
Dice is computed over all pixels of all test records together: 2|P & T| / (|P| + |T|).
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.grading import InvalidSubmission
from pytest_mlab.grading.submission import read_submission

SUBMISSION = "submission.csv"


def rle_decode(encoded: str, size: int, record_id: str) -> np.ndarray:
    """The set of 0-based pixel indices of a run-length encoding; InvalidSubmission when malformed."""
    if encoded in ("-", ""):
        return np.empty(0, dtype=np.int64)
    where = f"{SUBMISSION}: record {record_id}: encoded_pixels"
    try:
        numbers = np.array([int(token) for token in encoded.split()], dtype=np.int64)
    except ValueError:
        raise InvalidSubmission(f"{where} must be space-separated integers 'start length ...' or '-' for an "
                                f"empty mask; found {encoded[:60]!r}") from None
    if len(numbers) % 2:
        raise InvalidSubmission(f"{where} has an odd number of values ({len(numbers)}); it must be "
                                f"'start length' pairs")
    starts, lengths = numbers[0::2], numbers[1::2]
    if (starts < 1).any() or (lengths < 1).any():
        raise InvalidSubmission(f"{where}: starts are 1-based and lengths positive; found a value below 1")
    ends = starts + lengths - 1
    if (ends > size).any():
        raise InvalidSubmission(f"{where}: a run ends at pixel {int(ends.max())}, past the image's {size} pixels")
    if (starts[1:] <= ends[:-1]).any():
        raise InvalidSubmission(f"{where}: runs must be sorted by start and must not overlap")
    return np.concatenate([np.arange(s - 1, e) for s, e in zip(starts, ends)])


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv", dtype={"record_id": str}).set_index("record_id")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, ["record_id", "encoded_pixels"],
                                 truth.index, "test/", id_column="record_id", text_ids=True,
                                 text_columns=("encoded_pixels",))
    overlap = predicted_total = true_total = 0
    for record_id, row in truth.iterrows():
        size = int(row["height"]) * int(row["width"])
        predicted = rle_decode(submission.loc[record_id, "encoded_pixels"], size, record_id)
        actual = rle_decode(row["encoded_pixels"], size, record_id)
        overlap += len(np.intersect1d(predicted, actual))
        predicted_total += len(predicted)
        true_total += len(actual)
    if predicted_total + true_total == 0:
        return 1.0
    return 2.0 * overlap / (predicted_total + true_total)

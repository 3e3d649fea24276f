"""Grader for the identify-contrails task: the mean over test records of each record's Dice
coefficient, as the original benchmark's evaluator scores it.

submission.csv has one row per test record: ``record_id`` and ``encoded_pixels``, the
competition's run-length encoding of the predicted mask ('start length' pairs, 1-based, pixels
numbered top to bottom then left to right; '-' for no contrail). Rows are matched by record_id.
Each record scores (2|P & T| + s) / (|P| + |T| + s) with s = 1e-6, so a record with no contrail
predicted and none true scores 1, and an empty prediction of a real contrail scores about 0.
The score is the plain mean of these, every record counting the same whatever its contrail area.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

from pytest_mlab.task_api import InvalidSubmission, read_submission

SUBMISSION = "submission.csv"
SMOOTHING = 1e-6  # the original evaluator's constant, in numerator and denominator


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


def record_dice(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Smoothed Dice of one record's pixel index sets; 1 when both are empty."""
    overlap = len(np.intersect1d(predicted, actual))
    return (2.0 * overlap + SMOOTHING) / (len(predicted) + len(actual) + SMOOTHING)


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv", dtype={"record_id": str}).set_index("record_id")
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, ["record_id", "encoded_pixels"],
                                 truth.index, "test/", id_column="record_id", text_ids=True,
                                 text_columns=("encoded_pixels",))
    scores = []
    for record_id, row in truth.iterrows():
        size = int(row["height"]) * int(row["width"])
        predicted = rle_decode(submission.loc[record_id, "encoded_pixels"], size, record_id)
        actual = rle_decode(row["encoded_pixels"], size, record_id)
        scores.append(record_dice(predicted, actual))
    return float(np.mean(scores))

"""Offline stand-in for the competition's time-series API: serves the test visits one visit
month at a time, and collects your predictions into submission.csv.

    from public_timeseries_testing_util import MockApi
    env = MockApi()
    for test, test_peptides, test_proteins, sample_submission in env.iter_test():
        sample_submission["rating"] = ...      # one rating per prediction_id
        env.predict(sample_submission)          # once per visit month, before asking for the next
    # submission.csv now holds every prediction

Each step gives only that month's visits: you cannot look ahead at later visits.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

FOLDER = "example_test_files"
FILES = ("test.csv", "test_peptides.csv", "test_proteins.csv", "sample_submission.csv")
GROUP = "group_key"


class MockApi:
    def __init__(self, folder: str = FOLDER, output: str = "submission.csv") -> None:
        self.folder, self.output = folder, output
        self.predictions: list[pd.DataFrame] = []
        self._expected: pd.DataFrame | None = None

    def iter_test(self):
        frames = [pd.read_csv(os.path.join(self.folder, name)) for name in FILES]
        for group in sorted(frames[0][GROUP].unique()):
            parts = tuple(frame[frame[GROUP] == group].drop(columns=GROUP).reset_index(drop=True) for frame in frames)
            self._expected = parts[3]
            yield parts
            if self._expected is not None:
                raise RuntimeError(f"call env.predict(...) for visit month {group} before asking for the next month")
        pd.concat(self.predictions, ignore_index=True).to_csv(self.output, index=False)

    def predict(self, submission: pd.DataFrame) -> None:
        if self._expected is None:
            raise RuntimeError("predict() must be called once per step of iter_test()")
        if not isinstance(submission, pd.DataFrame) or list(submission.columns) != ["prediction_id", "rating"]:
            raise ValueError("predict() takes a DataFrame with exactly the columns prediction_id, rating")
        if set(submission["prediction_id"]) != set(self._expected["prediction_id"]):
            raise ValueError("predict() needs one rating for every prediction_id of this step's sample_submission")
        if not np.isfinite(pd.to_numeric(submission["rating"], errors="coerce")).all():
            raise ValueError("every rating must be a finite number")
        self.predictions.append(submission.copy())
        self._expected = None

"""Data for the diabetes task: scikit-learn's diabetes data (442 patients), split 80/20.

public/train.csv  id, age, sex, bmi, bp, s1..s6, target   (354 rows)
public/test.csv   id, age, sex, bmi, bp, s1..s6           (88 rows)
hidden/answers.csv id, target                             (the test rows' targets)

The split and the ids come from ``numpy.random.default_rng(seed)``, so the files are
byte-for-byte the same for the same seed.
"""

from __future__ import annotations

import pathlib

import numpy as np
from sklearn.datasets import load_diabetes

FEATURES = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
TEST_FRACTION = 0.2
# Columns whose values are all whole numbers; written without a trailing ".0".
INTEGER_COLUMNS = ["age", "sex", "s1", "s6", "target"]


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    public.mkdir(parents=True, exist_ok=True)
    hidden.mkdir(parents=True, exist_ok=True)

    frame = load_diabetes(as_frame=True, scaled=False).frame[FEATURES + ["target"]].copy()
    for column in INTEGER_COLUMNS:
        frame[column] = frame[column].round().astype("int64")

    rng = np.random.default_rng(seed)
    frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
    frame.insert(0, "id", np.arange(1, len(frame) + 1, dtype="int64"))
    n_test = int(round(TEST_FRACTION * len(frame)))
    train, test = frame.iloc[:-n_test], frame.iloc[-n_test:]

    train.to_csv(public / "train.csv", index=False)
    test[["id"] + FEATURES].to_csv(public / "test.csv", index=False)
    test[["id", "target"]].to_csv(hidden / "answers.csv", index=False)

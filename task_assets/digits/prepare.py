"""Data for the digits task: scikit-learn's 8x8 handwritten digit images (1797), split 80/20.

public/train.npz   images uint8 (N, 8, 8) with values 0..16, labels int64 (N,), ids int64 (N,)
public/test.npz    images uint8 (M, 8, 8), ids int64 (M,)
hidden/answers.csv id, label

The split and the ids come from ``numpy.random.default_rng(seed)``; the .npz archives are
written with fixed timestamps so the files are byte-for-byte the same for the same seed.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits

from pytest_mlab.task_api import save_npz

TEST_FRACTION = 0.2


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    public.mkdir(parents=True, exist_ok=True)
    hidden.mkdir(parents=True, exist_ok=True)

    digits = load_digits()
    images = np.rint(digits.images).astype(np.uint8)
    labels = digits.target.astype(np.int64)

    rng = np.random.default_rng(seed)
    order = rng.permutation(len(labels))
    images, labels = images[order], labels[order]
    ids = np.arange(1, len(labels) + 1, dtype=np.int64)
    n_test = int(round(TEST_FRACTION * len(labels)))
    train, test = slice(None, -n_test), slice(-n_test, None)

    save_npz(public / "train.npz", images=images[train], labels=labels[train], ids=ids[train])
    save_npz(public / "test.npz", images=images[test], ids=ids[test])
    pd.DataFrame({"id": ids[test], "label": labels[test]}).to_csv(hidden / "answers.csv", index=False)

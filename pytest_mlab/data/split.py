"""Deterministic held-out splits for full data variants.

The hidden test set of a full variant must be the same on every machine and every run, whatever
order the source lists its rows in: ids are sorted before a seeded permutation picks the held-out
ones. Tasks that reproduce the original benchmark's own cut use :func:`shuffle_split` instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pytest_mlab.errors import DataError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd


def split_ids(ids: Iterable, fraction: float, seed: int) -> tuple["np.ndarray", "np.ndarray"]:
    """``(kept, held_out)``: ``round(fraction * n)`` of the unique ``ids`` held out, both sorted."""
    import numpy as np  # lazily: the plugin imports this package at startup

    values = np.asarray(list(ids))
    if not 0.0 < fraction < 1.0:
        raise DataError(f"split fraction {fraction} must be between 0 and 1 (exclusive)")
    if values.ndim != 1 or len(values) < 2:
        raise DataError(f"need at least two ids to split, got {len(values)}")
    unique, counts = np.unique(values, return_counts=True)
    if len(unique) != len(values):
        repeated = ", ".join(str(value) for value in unique[counts > 1][:5])
        raise DataError(f"ids to split must be unique; repeated: {repeated}")
    held = min(max(int(round(fraction * len(unique))), 1), len(unique) - 1)
    order = np.random.default_rng(seed).permutation(len(unique))
    return np.sort(unique[order[held:]]), np.sort(unique[order[:held]])


def shuffle_split(frame: "pd.DataFrame", keep_fraction: float,
                  random_state: int) -> tuple["pd.DataFrame", "pd.DataFrame"]:
    """``(kept, held_out)`` by the original benchmark's rule for several Kaggle tasks: shuffle the
    rows with pandas' seeded ``sample``, keep the first ``int(n * keep_fraction)`` rows in that
    shuffled order and hold out the rest, so that full scores compare with the original's."""
    if not 0.0 < keep_fraction < 1.0:
        raise DataError(f"keep fraction {keep_fraction} must be between 0 and 1 (exclusive)")
    shuffled = frame.sample(frac=1, random_state=random_state).reset_index(drop=True)
    cut = int(len(shuffled) * keep_fraction)
    if cut == 0 or cut == len(shuffled):
        raise DataError(f"keeping {keep_fraction:.0%} of {len(shuffled)} rows leaves one side empty; "
                        f"need more rows to split")
    return shuffled.iloc[:cut], shuffled.iloc[cut:]

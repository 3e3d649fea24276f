"""Deterministic held-out splits for full data variants.

The hidden test set of a full variant must be the same on every machine and every run, whatever
order the source lists its rows in: ids are sorted before a seeded permutation picks the held-out
ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pytest_mlab.errors import DataError

if TYPE_CHECKING:
    import numpy as np


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

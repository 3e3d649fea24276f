"""split_ids(): the same held-out ids for the same seed, whatever order the source lists them in."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_mlab.data.split import split_ids
from pytest_mlab.errors import DataError


def test_split_is_deterministic_disjoint_and_sized():
    ids = [f"p{i}" for i in range(100)]
    kept, held = split_ids(ids, 0.2, seed=3)
    assert len(held) == 20 and len(kept) == 80
    assert set(kept).isdisjoint(held) and set(kept) | set(held) == set(ids)
    again_kept, again_held = split_ids(list(reversed(ids)), 0.2, seed=3)
    assert np.array_equal(held, again_held) and np.array_equal(kept, again_kept)
    assert not np.array_equal(held, split_ids(ids, 0.2, seed=4)[1])


def test_tiny_inputs_keep_one_on_each_side():
    kept, held = split_ids([5, 7], 0.01, seed=0)
    assert len(kept) == 1 and len(held) == 1


@pytest.mark.parametrize("ids, fraction, message", [
    ([1, 2, 2, 3], 0.5, "must be unique; repeated: 2"),
    ([1], 0.5, "at least two ids"),
    ([1, 2, 3], 1.0, "between 0 and 1"),
])
def test_bad_splits_are_explained(ids, fraction, message):
    with pytest.raises(DataError, match=message):
        split_ids(ids, fraction, seed=0)


def test_shuffle_split_is_the_original_benchmarks_pandas_cut():
    import pandas as pd

    from pytest_mlab.data.split import shuffle_split

    frame = pd.DataFrame({"id": [f"r{i}" for i in range(50)], "value": range(50)})
    kept, held = shuffle_split(frame, 0.98, random_state=42)
    shuffled = frame.sample(frac=1, random_state=42)
    assert list(kept["id"]) == list(shuffled["id"][:49]) and list(held["id"]) == list(shuffled["id"][49:])
    assert list(kept.index) == list(range(49)) and list(held.index) == [49], "index reset, as the original does"
    assert len(shuffle_split(frame, 0.7, random_state=42)[0]) == 35  # int(50 * 0.7), rounded down


@pytest.mark.parametrize("rows, fraction, message", [
    (10, 1.0, "between 0 and 1"),
    (10, 0.05, "leaves one side empty"),
])
def test_bad_shuffle_splits_are_explained(rows, fraction, message):
    import pandas as pd

    from pytest_mlab.data.split import shuffle_split

    with pytest.raises(DataError, match=message):
        shuffle_split(pd.DataFrame({"id": range(rows)}), fraction, random_state=0)

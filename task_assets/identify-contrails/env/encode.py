"""Run-length encoding of contrail masks, in the format submission.csv uses.

A mask is read column by column: pixels are numbered from top to bottom, then left to right,
starting at 1. A mask is encoded as "start length" pairs, one per run of contrail pixels, and an
empty mask as "-".
"""

import numpy as np


def rle_encode(mask: np.ndarray, fg_val: int = 1) -> list:
    """[start, length, start, length, ...] of the runs of pixels equal to ``fg_val`` in a 2-D mask."""
    hits = np.concatenate([[False], np.asarray(mask).T.flatten() == fg_val, [False]])
    edges = np.flatnonzero(hits[1:] != hits[:-1])  # 0-based first pixel of each run, then one past its end
    starts, ends = edges[0::2], edges[1::2]
    return [int(v) for pair in zip(starts + 1, ends - starts) for v in pair]


def list_to_string(runs: list) -> str:
    """The runs as submission.csv writes them: space-separated numbers, or '-' when there are none."""
    return " ".join(str(v) for v in runs) if runs else "-"


def rle_decode(encoded: str, shape: tuple = (256, 256)) -> np.ndarray:
    """The uint8 mask (1 = contrail) of an encoding written by list_to_string."""
    flat = np.zeros(shape[0] * shape[1], dtype=np.uint8)
    if encoded.strip() not in ("-", ""):
        values = np.array(encoded.split(), dtype=np.int64)
        for start, length in zip(values[0::2], values[1::2]):
            flat[start - 1:start - 1 + length] = 1
    return flat.reshape(shape, order="F")

"""Data for the vectorization task: the convolution train.py is timed and checked on.

``full`` is the original's workload (a batch of 32 images of 64x64 with 3 channels, 8 filters of
3x3, stride 2, padding 2, ReLU), which takes the starter's loops about two CPU seconds; ``mini``
times a batch of MINI_BATCH images with the same layer: half the work, still about a second
against a start-up of 0.15 s, so that the timed rounds of both mini items fit their budget
(docs/fidelity.md).

The agent sees no data files (``public`` stays empty); ``train.py`` makes its own random batch.
``hidden/conv_config.json``, the measure step's only input (``metric.measure.inputs``), holds the
layer's configuration and the batch's shape, nothing else: the batch, the kernel and the bias
are drawn by the measure step from the grading's seed (``mlab_measure.grading_seed``), fresh for
each grading, so no output can be computed ahead; the grader checks the submission's output
against the unchanged starter's on the same draw. The data's own seed changes nothing.
"""

from __future__ import annotations

import json
import pathlib

# Same configuration as main() in env/train.py, so the agent's own timing matches the graded one.
CONFIG = {
    "batch_shape": [32, 64, 64, 3],
    "num_filters": 8,
    "kernel_size": 3,
    "stride": 2,
    "padding": 2,
    "activation": "relu",
}


MINI_BATCH = 16  # images of the mini data's timed batch, half of full's 32


def _case(public: pathlib.Path, hidden: pathlib.Path, batch: int) -> None:
    """The layer's configuration for a batch of ``batch`` images of the original's size."""
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    public.mkdir(parents=True, exist_ok=True)
    hidden.mkdir(parents=True, exist_ok=True)
    config = {**CONFIG, "batch_shape": [batch, *CONFIG["batch_shape"][1:]]}
    (hidden / "conv_config.json").write_text(json.dumps(config, sort_keys=True) + "\n")


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    _case(public, hidden, MINI_BATCH)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    """The original's workload."""
    _case(public, hidden, CONFIG["batch_shape"][0])

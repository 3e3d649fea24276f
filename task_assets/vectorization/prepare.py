"""Data for the vectorization task: one hidden convolution case train.py is timed and checked on.

The data is generated. ``full`` is the original's workload (a batch of 32 images of 64x64 with 3
channels, 8 filters of 3x3, stride 2, padding 2, ReLU), which takes the starter's loops about two
CPU seconds; ``mini`` times the first MINI_BATCH images of the same batch, with the same layer:
half the work, still about a second against a start-up of 0.15 s, so that the timed rounds of
both mini items fit their budget (docs/fidelity.md).

The agent sees no data files (``public`` stays empty); ``train.py`` makes its own random batch.
``hidden/conv_case.npz`` holds the layer configuration, the kernel, the bias, the input batch and
the expected output, computed here independently of the starter's loops: the grader's.
``hidden/conv_inputs.npz`` holds the same without the expected output: the measure step's input
(``metric.measure.inputs``), the only file of the hidden folder that reaches a sandbox.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from pytest_mlab.task_api import save_npz

# Same configuration as main() in env/train.py, so the agent's own timing matches the graded one.
CONFIG = {
    "batch_shape": [32, 64, 64, 3],
    "num_filters": 8,
    "kernel_size": 3,
    "stride": 2,
    "padding": 2,
    "activation": "relu",
}


def conv2d_reference(features: np.ndarray, kernel: np.ndarray, bias: np.ndarray,
                     stride: int, padding: int, activation: str | None) -> np.ndarray:
    """Channels-last 2D cross-correlation (what Conv2DLayer.forward computes), vectorized."""
    k = kernel.shape[0]
    padded = np.pad(features, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    # windows: (batch, h_new, w_new, channels, k, k) after striding
    windows = np.lib.stride_tricks.sliding_window_view(padded, (k, k), axis=(1, 2))
    windows = windows[:, ::stride, ::stride]
    out = np.einsum("bhwcij,ijcf->bhwf", windows, kernel, optimize=True) + bias.reshape(1, 1, 1, -1)
    if activation == "relu":
        out = np.maximum(out, 0.0)
    return out


MINI_BATCH = 16  # images of the mini data's timed batch: the first of full's 32


def _case(public: pathlib.Path, hidden: pathlib.Path, seed: int, batch: int) -> None:
    """The first ``batch`` images of the original's batch, generated from the seed, and the layer."""
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    public.mkdir(parents=True, exist_ok=True)
    hidden.mkdir(parents=True, exist_ok=True)

    rng = np.random.default_rng(seed)
    batch_shape = tuple(CONFIG["batch_shape"])
    k, channels, filters = CONFIG["kernel_size"], batch_shape[3], CONFIG["num_filters"]
    features = rng.standard_normal(batch_shape)[:batch]
    kernel = rng.standard_normal((k, k, channels, filters))
    bias = rng.standard_normal((1, 1, 1, filters))
    expected = conv2d_reference(features, kernel, bias, CONFIG["stride"], CONFIG["padding"],
                                CONFIG["activation"])
    config = np.array(json.dumps({**CONFIG, "batch_shape": [batch, *batch_shape[1:]]}, sort_keys=True))
    save_npz(hidden / "conv_case.npz", features=features, kernel=kernel, bias=bias, expected=expected, config=config)
    save_npz(hidden / "conv_inputs.npz", features=features, kernel=kernel, bias=bias, config=config)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    _case(public, hidden, seed, MINI_BATCH)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    """The original's workload."""
    _case(public, hidden, seed, CONFIG["batch_shape"][0])

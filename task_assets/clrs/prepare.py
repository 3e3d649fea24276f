"""Data for the CLRS task: the hidden Floyd-Warshall test graphs of CLRS-30, made by CLRS's own code.

CLRS-30 is not data collected anywhere: each split is drawn by the clrs package's sampler from a
fixed seed (``clrs.CLRS30``: test = 32 graphs of 64 nodes, seed 3), and the published archive
(CLRS30_v1.0.0.tar.gz) is a TensorFlow Datasets build of exactly that. ``full`` therefore draws the
test split here, offline, with the installed clrs (dm-clrs 2.0.0) as its dataset builder does.
Training and validation graphs need no files: train.py samples them on the fly, as the original.

hidden/floyd_warshall_test.npz         the test split, named as CLRS's dataset names its features:
    input_pos, input_A, input_adj      (B, N) / (B, N, N)   inputs
    hint_Pi_h, hint_D, hint_msk, hint_k (T, B, ...)         hint trajectories, time-major
    output_Pi                          (B, N, N)            the answer: predecessor pointers
    lengths                            (B,)                 steps of each trajectory
hidden/floyd_warshall_test_inputs.npz  what the measure step (in the run's sandbox) gets: the
    inputs, the lengths, and the hints with every step after the first zeroed (the last step of
    Pi_h agrees with the answer on about 98% of the pointers). The model reads
    the first hint step (a function of the inputs) and the trajectory's length, never the truth.
public/CLRS30/train_flags.txt          flags train.py reads before its own defaults: none on full;
    on mini, fewer training steps (see MINI_FLAGS).

``mini`` keeps every shape of ``full`` (64-node test graphs, the same training sizes and batch)
and scales down only counts: 4 test graphs drawn from the run's seed, and fewer training steps.
"""

from __future__ import annotations

import pathlib

import numpy as np

from pytest_mlab.task_api import save_npz

ALGORITHM = "floyd_warshall"
FOLDER = "CLRS30"
FLAGS_FILE = "train_flags.txt"
MINI_TEST_GRAPHS = 4
# Counts scaled down for a CPU: the real 500 steps take about 20 min on 2 cores (2.5 s a step).
MINI_FLAGS = ("--train_steps=12", "--eval_every=6", "--log_every=6")


def test_split(seed: int, count: int, length: int) -> dict[str, np.ndarray]:
    """``count`` Floyd-Warshall samples of ``length`` nodes, drawn as CLRS's dataset builder draws them."""
    from clrs._src import samplers

    sampler, _ = samplers.build_sampler(ALGORITHM, seed=seed, num_samples=count, length=length)
    feedback = sampler.next(batch_size=None)
    arrays = {f"input_{point.name}": point.data for point in feedback.features.inputs}
    arrays.update({f"hint_{point.name}": point.data for point in feedback.features.hints})
    arrays.update({f"output_{point.name}": point.data for point in feedback.outputs})
    arrays["lengths"] = feedback.features.lengths
    return {name: np.asarray(value) for name, value in arrays.items()}


def measure_inputs(split: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What the sandboxed measure step may see: no outputs, and no hint past the first step (the
    last hint step of Pi_h is the answer)."""
    shown = {name: value for name, value in split.items() if name.startswith("input_") or name == "lengths"}
    for name in (n for n in split if n.startswith("hint_")):
        hint = np.zeros_like(split[name])
        hint[0] = split[name][0]
        shown[name] = hint
    return shown


def _write(public: pathlib.Path, hidden: pathlib.Path, split: dict[str, np.ndarray], flags: tuple[str, ...]) -> None:
    folder = pathlib.Path(public) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Flags train.py reads before its defaults (one --flag=value per line); the command line wins."]
    (folder / FLAGS_FILE).write_text("\n".join(lines + list(flags)) + "\n")
    pathlib.Path(hidden).mkdir(parents=True, exist_ok=True)
    save_npz(pathlib.Path(hidden) / f"{ALGORITHM}_test.npz", **split)
    save_npz(pathlib.Path(hidden) / f"{ALGORITHM}_test_inputs.npz", **measure_inputs(split))


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    from clrs._src import samplers

    length = samplers.CLRS30["test"]["length"]
    _write(public, hidden, test_split(1000 + seed, MINI_TEST_GRAPHS, length), MINI_FLAGS)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    """CLRS-30's test split; ``seed`` changes nothing (the benchmark fixes its own)."""
    from clrs._src import samplers, specs

    settings = samplers.CLRS30["test"]
    count = settings["num_samples"] * specs.CLRS_30_ALGS_SETTINGS[ALGORITHM]["num_samples_multiplier"]
    _write(public, hidden, test_split(settings["seed"], count, settings["length"]), ())

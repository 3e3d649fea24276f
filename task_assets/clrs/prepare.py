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
    on mini, the smaller sizes of MINI_FLAGS.
public/CLRS30/xla_cache/               mini only: JAX's persistent compilation cache of the unchanged
    starter on those sizes (see warm_up), which mini's flags point train.py at. Made here, outside
    any sandbox; the measure step never reads a compilation cache.

``mini`` is sized for two CPU cores (see docs/fidelity.md, clrs): the same starter, model, sampler,
measure step and grader, on smaller graphs and fewer steps, tested on graphs of the largest
training size (in distribution, where full tests out of it). On a CPU, compiling the model's
training step takes longer than training on the small graphs: one compilation per training size,
each about 25 s of CPU. mini therefore trains on two sizes instead of five, and its data holds
the compiled steps of the unchanged starter, so that the baseline and the reference (the same
model) load them instead of compiling them again. JAX's cache keys hold the cache folder's name as
given, so the warm-up uses the flags file's relative CLRS30/xla_cache, as every run does.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from pytest_mlab.task_api import DataError, save_npz

ALGORITHM = "floyd_warshall"
FOLDER = "CLRS30"
FLAGS_FILE = "train_flags.txt"
MINI_TEST_GRAPHS = 8
MINI_TRAIN_LENGTHS = (4, 8)
# The largest training size, where full tests at four times it. At 64 nodes a dozen steps on a CPU
# left the score at chance (about 1/64), where float round-off decides it; at 16 nodes (twice the
# largest) the reference's four times longer training scored below the starter (0.0825 to 0.0962):
# what 20 to 80 steps learn on small graphs does not carry over to larger ones. At 8 nodes it does.
MINI_TEST_LENGTH = max(MINI_TRAIN_LENGTHS)
# XLA compiles for the host's instruction set, and its float results differ with it: the same run
# gave other bits with AVX-512 than capped at AVX2. Capped, hosts with and without AVX-512 agree.
MINI_XLA_FLAGS = "--xla_cpu_max_isa=AVX2"
MINI_FLAGS = (f"--train_lengths={','.join(map(str, MINI_TRAIN_LENGTHS))}", "--batch_size=8", "--train_steps=20",
              "--eval_every=10", "--log_every=10", f"--xla_flags={MINI_XLA_FLAGS}")
CACHE = "xla_cache"
STARTER = pathlib.Path(__file__).parent / "env"


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


def _write(public: pathlib.Path, hidden: pathlib.Path, split: dict[str, np.ndarray], flags: tuple[str, ...],
           xla_flags: str = "") -> None:
    folder = pathlib.Path(public) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["# Flags train.py reads before its defaults (one --flag=value per line); the command line wins."]
    (folder / FLAGS_FILE).write_text("\n".join(lines + list(flags)) + "\n")
    pathlib.Path(hidden).mkdir(parents=True, exist_ok=True)
    save_npz(pathlib.Path(hidden) / f"{ALGORITHM}_test.npz", **split)
    shown = measure_inputs(split)
    if xla_flags:  # the measure step predicts under the same XLA_FLAGS as training
        shown["xla_flags"] = np.array(xla_flags)
    save_npz(pathlib.Path(hidden) / f"{ALGORITHM}_test_inputs.npz", **shown)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    mini_data(public, hidden, seed)
    warm_up(pathlib.Path(public) / FOLDER)


def mini_data(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    """mini's test graphs from the run's seed and its flags, without the compilation cache."""
    flags = MINI_FLAGS + (f"--compilation_cache={FOLDER}/{CACHE}",)
    _write(public, hidden, test_split(1000 + seed, MINI_TEST_GRAPHS, MINI_TEST_LENGTH), flags, MINI_XLA_FLAGS)


def warm_up(folder: pathlib.Path) -> None:
    """Fill ``folder``/xla_cache by running the unchanged starter with ``folder``'s flags, long enough
    to compile what a full run compiles: a training step of each size on the parameters init made
    and, another signature to XLA, on those a step returned; validation after the first step,
    after later ones and after restoring the checkpoint. Two rounds of the sizes and one more step,
    validated at the first and the last, do all of that. Every compilation is kept, however short:
    JAX keeps only those over a second by default, which depends on the machine's load."""
    rounds = 2 * len(MINI_TRAIN_LENGTHS)
    environment = {**os.environ, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    with tempfile.TemporaryDirectory() as scratch:
        workspace = pathlib.Path(scratch) / "env"
        shutil.copytree(STARTER, workspace)
        shutil.copytree(folder, workspace / FOLDER)
        # train.py's own --compilation_cache (FOLDER/CACHE, relative): JAX puts the cache folder's
        # name, as given, into every key (an XLA autotuning folder under it), so another name misses
        command = [sys.executable, "train.py", f"--train_steps={rounds + 1}", f"--eval_every={rounds}"]
        done = subprocess.run(command, cwd=workspace, env=environment, capture_output=True, text=True)
        if done.returncode:
            raise DataError(f"{STARTER / 'train.py'}: compiling the starter for the mini data failed "
                            f"(exit {done.returncode}); its last lines:\n{done.stderr[-2000:]}")
        shutil.copytree(workspace / FOLDER / CACHE, pathlib.Path(folder) / CACHE, dirs_exist_ok=True)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    """CLRS-30's test split; ``seed`` changes nothing (the benchmark fixes its own)."""
    from clrs._src import samplers, specs

    settings = samplers.CLRS30["test"]
    count = settings["num_samples"] * specs.CLRS_30_ALGS_SETTINGS[ALGORITHM]["num_samples_multiplier"]
    _write(public, hidden, test_split(settings["seed"], count, settings["length"]), ())

"""Attacks on timed grading through what the agent can know ahead or change in its own process:
outputs remembered for the inputs the data's seed gives (the issue's vectorization memo), and a
GPU time forged from inside the measured process (a replaced clock, a false report).

Timed tasks draw their test inputs at each grading from a fresh seed, and the submission's
outputs are compared with the unchanged starter's on the same draw; on a GPU the harness's own
wall clock around each whole execution is compared. Each attack runs through the real grading
path on every backend that can run here: neither defence depends on isolation, so local is
included.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.grading.grader import grade_snapshot
from pytest_mlab.in_sandbox import mlab_measure
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.trace import SnapshotStore
from tests.grading.support import tiny_task
from tests.shared_data import shared_mini
from tests.tasks.support import ASSETS, load_function, task_spec

HONEST_MIN = 0.6  # an honest equal speed scores about 1.0; a forged time would be far below


def seed_zero_memo() -> np.ndarray:
    """The forward output for the inputs mini was drawn from before grading drew them: seed 0's
    batch (the first 16 images of full's), kernel and bias, as the issue's attacker computed it."""
    rng = np.random.default_rng(0)
    features = rng.standard_normal((32, 64, 64, 3))[:16]
    kernel = rng.standard_normal((3, 3, 3, 8))
    bias = rng.standard_normal((1, 1, 1, 8))
    padded = np.pad(features, ((0, 0), (2, 2), (2, 2), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(1, 2))[:, ::2, ::2]
    return np.maximum(np.einsum("bhwcij,ijcf->bhwf", windows, kernel) + bias.reshape(1, 1, 1, -1), 0.0)


MEMO_FORWARD = textwrap.dedent('''

    _MEMO = np.load("memo.npz")["output"]


    def _remembered(self, features_batch):
        """The loops' output, remembered: no work at all."""
        return _MEMO.copy()


    Conv2DLayer.forward = _remembered
''')


@pytest.mark.slow
def test_a_memo_of_the_seed_zero_outputs_is_rejected(kind, tmp_path):
    """The issue's attack: the starter unchanged plus a memo of its outputs for seed 0's inputs.
    It scored +98.3% and passed when the inputs were prepared from seed 0."""
    public, hidden = shared_mini("vectorization")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "train.py").write_text((ASSETS / "vectorization" / "env" / "train.py").read_text() + MEMO_FORWARD)
    np.savez(workspace / "memo.npz", output=seed_zero_memo())
    spec = task_spec("vectorization")
    spec = dataclasses.replace(spec, metric=dataclasses.replace(
        spec.metric, measure=dataclasses.replace(spec.metric.measure, timing_repeats=1)))  # one round is enough
    store = SnapshotStore(tmp_path / "snapshots")
    data = PreparedData(public, hidden)
    snapshot = store.snapshot(workspace, link_paths=data.public_files()).id
    grade = grade_snapshot(spec, store, snapshot, data, sandbox=kind,
                           options=SandboxOptions.for_task(spec, spec.limits, "attack-memo"))
    assert not grade.valid and not grade.grader_failed, grade
    assert "differs from the original loops' output" in grade.invalid_reason
    assert isinstance(grade.timing["inputs_seed"], int), "the grading's seed is recorded after grading"


GPU_MEASURE = textwrap.dedent('''
    import json, os, sys, time
    import mlab_measure
    inputs, out = mlab_measure.folders()
    if mlab_measure.overhead_phase():
        mlab_measure.finish(out)
    sys.path.insert(0, os.getcwd())
    import work
    started = time.perf_counter()
    work.run()
    mlab_measure.finish(out, on_gpu=True, gpu_seconds=time.perf_counter() - started)
''')
GPU_STARTER = "import time\n\ndef run():\n    time.sleep(1.0)  # a GPU's work: no CPU time\n"
GPU_FORGER = textwrap.dedent('''
    import time
    import mlab_measure

    _real = time.perf_counter
    time.perf_counter = lambda: 0.0           # the measure script's clock, as the issue replaced it
    mlab_measure.time = time
    _finish = mlab_measure.finish

    def finish(out, **result):
        _finish(out, **{**result, "gpu_seconds": 1e-6})   # and a report of its own, to be sure
    mlab_measure.finish = finish

    def run():
        time.sleep(1.0)  # the same work as the starter's
''')


@pytest.mark.slow
def test_a_gpu_time_forged_inside_the_measured_process_changes_nothing(kind, tmp_path):
    """The starter reports that it ran on a GPU; the submission replaces the clock the measure
    script reads and rewrites its own report. The harness's wall clock decides: equal work
    scores about 1.0, not the forged 1e-6."""
    task = tiny_task(tmp_path, GPU_MEASURE, starter={"work.py": GPU_STARTER}, repeats=2, submission="work.py",
                     grader="from pytest_mlab.task_api import relative_time\n\n"
                            "def score(workspace, answers, measured):\n"
                            "    return relative_time(measured, 'work.py')\n")
    grade = task.grade(kind, {"work.py": GPU_FORGER})
    assert grade.valid, grade.invalid_reason
    assert grade.timing["on_gpu"] is True
    assert grade.score >= HONEST_MIN


FAKE_INFERENCE = textwrap.dedent('''
    import torch

    def load_model():
        return None, None

    def generate(model, input_ids):
        return torch.cat([input_ids, input_ids[:, -1:]], dim=1)
''')


def run_llama_measure(folder: Path, seed: int, config: dict) -> np.ndarray:
    """llama-inference's measure.py as the sandbox runs it (without the sandbox) on an inference.py
    that needs no model; returns the prompts it timed (its output less the one new token)."""
    folder.mkdir()
    shutil.copy(ASSETS / "llama-inference" / "measure.py", folder / "measure.py")
    shutil.copy(Path(mlab_measure.__file__), folder / "mlab_measure.py")
    (folder / "inference.py").write_text(FAKE_INFERENCE)
    (folder / "inputs").mkdir()
    (folder / "out").mkdir()
    (folder / "inputs" / "prompts_config.json").write_text(json.dumps(config))
    environment = {**os.environ, mlab_measure.SEED_VARIABLE: str(seed)}
    completed = subprocess.run([sys.executable, "measure.py", "inputs", "out"], cwd=folder, env=environment,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert json.loads((folder / "out" / "result.json").read_text())["on_gpu"] is False
    return np.load(folder / "out" / "output.npy")[0, ..., :-1]


@pytest.mark.slow
def test_llama_prompts_are_drawn_from_the_grading_seed_only(tmp_path):
    """The same seed draws the same prompts (the starter and the submission are timed and compared
    on them), another seed others: of the configured shape, BOS first, no special token after it."""
    config = {"batches": 3, "batch": 4, "context": 128, "new_tokens": 1, "vocab_size": 50, "bos_token_id": 1,
              "special_ids": [0, 1, 2]}
    first, again, other = (run_llama_measure(tmp_path / name, seed, config)
                           for name, seed in (("a", 7), ("b", 7), ("c", 8)))
    assert first.shape == (3, 4, 128)
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    assert (first[..., 0] == 1).all()
    assert first[..., 1:].min() >= 3 and first[..., 1:].max() < 50
    assert load_function("llama-inference", "prepare.py:BATCHES") == 100, "the original's 100 batches are drawn"

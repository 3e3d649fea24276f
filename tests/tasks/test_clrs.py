"""CLRS task assets: CLRS-30's hidden Floyd-Warshall test split drawn by the clrs package, what the
sandboxed measure step may see of it, and the grader on good, cheating and broken submissions.

The starter and reference runs (DeepMind's BaselineModel, trained by train.py) are checked once,
by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pytest_mlab.task_api import InvalidSubmission
from tests.shared_data import shared_mini
from tests.tasks.support import grade as grade_task, load_function, make_workspace, prepare, tree_digest

# The fast tier (-m "not slow") leaves this module out: it draws CLRS-30 graphs with DeepMind's clrs package
# and runs its model in JAX.
pytestmark = pytest.mark.slow

TASK = "clrs"
FEATURES = {"input_pos": 2, "input_A": 3, "input_adj": 3, "output_Pi": 3, "hint_Pi_h": 4, "hint_D": 4,
            "hint_msk": 4, "hint_k": 3, "lengths": 1}


@pytest.fixture(scope="module")
def data():
    return shared_mini(TASK)


def load(path) -> dict:
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def test_mini_is_small_and_ships_the_compiled_starter(data):
    public, hidden = data
    assert sorted(p.name for p in (public / "CLRS30").iterdir()) == ["train_flags.txt", "xla_cache"]
    flags = (public / "CLRS30" / "train_flags.txt").read_text().splitlines()
    for flag in ("--train_lengths=4,8", "--batch_size=8", "--train_steps=20", "--compilation_cache=CLRS30/xla_cache",
                 "--xla_flags=--xla_cpu_max_isa=AVX2"):
        assert flag in flags
    shown = load(hidden / "floyd_warshall_test_inputs.npz")
    assert str(shown["xla_flags"]) == "--xla_cpu_max_isa=AVX2", "the measure step predicts as training ran"
    assert len(list((public / "CLRS30" / "xla_cache").iterdir())) >= 3, "one training step per size, and validation"
    assert sorted(p.name for p in hidden.iterdir()) == ["floyd_warshall_test.npz", "floyd_warshall_test_inputs.npz"]
    test = load(hidden / "floyd_warshall_test.npz")
    assert {name: array.ndim for name, array in test.items()} == FEATURES
    steps, batch, n = test["hint_D"].shape[:3]
    assert (batch, n) == (8, 8), "mini tests on 8-node graphs, its largest training size"
    assert steps == n and (test["lengths"] == n).all()


def test_a_run_elsewhere_loads_the_compiled_steps(data, tmp_path):
    """JAX's cache keys hold the cache folder's name as given: the warm-up must use the flags file's
    relative name, or every run (each in its own workspace path) compiles its training steps again."""
    public, _ = data
    workspace = make_workspace(TASK, public, tmp_path / "another" / "workspace")
    done = subprocess.run([sys.executable, "train.py", "--train_steps=2", "--eval_every=2"], cwd=workspace,
                          capture_output=True, text=True, env={**os.environ, "JAX_DEBUG_LOG_MODULES": "jax._src.compiler"})
    assert done.returncode == 0, done.stderr[-2000:]
    misses = [line for line in done.stderr.splitlines() if "PERSISTENT COMPILATION CACHE MISS" in line
              and ("jit__feedback" in line or "jit__predict" in line)]
    assert not misses, misses


def test_the_measure_step_sees_no_answer(data):
    """The last hint step of Pi_h is nearly the answer: only the first step (a function of the inputs) is shown."""
    test, shown = load(data[1] / "floyd_warshall_test.npz"), load(data[1] / "floyd_warshall_test_inputs.npz")
    assert not [name for name in shown if name.startswith("output_")]
    assert np.mean(test["hint_Pi_h"][-1] == test["output_Pi"]) > 0.9, "the premise: the last hint is nearly the answer"
    for name in ("input_pos", "input_A", "input_adj", "lengths"):
        assert np.array_equal(shown[name], test[name])
    for name in ("hint_Pi_h", "hint_D", "hint_msk", "hint_k"):
        assert shown[name].shape == test[name].shape
        assert np.array_equal(shown[name][0], test[name][0])
        assert not shown[name][1:].any(), f"{name} shows steps past the first"


def test_output_pointers_are_shortest_path_predecessors(data):
    from scipy.sparse.csgraph import shortest_path

    test = load(data[1] / "floyd_warshall_test.npz")
    for weights, adj, pi in zip(test["input_A"], test["input_adj"], test["output_Pi"].astype(int)):
        graph = np.where((adj > 0) & ~np.eye(len(adj), dtype=bool), weights + 1e-9, 0)
        distance = shortest_path(graph, directed=False)
        for i in range(len(pi)):
            for j in range(len(pi)):
                if i != j and np.isfinite(distance[i, j]):
                    k = pi[i, j]
                    assert adj[k, j] and distance[i, k] + graph[k, j] == pytest.approx(distance[i, j], abs=1e-6)
                elif i != j:
                    assert pi[i, j] == i


def test_mini_is_deterministic_and_seeded(tmp_path):
    """The graphs and flags (the compilation cache holds compile times: its bytes vary)."""
    recipe = load_function(TASK, "prepare.py:mini_data")

    def made(name: str, seed: int = 0) -> dict[str, str]:
        recipe(tmp_path / name / "public", tmp_path / name / "hidden", seed)
        return tree_digest(tmp_path / name)

    first = made("a")
    assert first == made("b")
    assert first != made("c", seed=1)


def test_full_draws_clrs30s_test_split_offline(tmp_path):
    """CLRS-30's test split is the clrs sampler's output from seed 3: 32 graphs of 64 nodes, whatever
    the run's seed (prepared here from seed 7), and train.py keeps its own defaults (no flags)."""
    from clrs._src import samplers

    recipe = load_function(TASK, "prepare.py:full")
    recipe(tmp_path / "a" / "public", tmp_path / "a" / "hidden", 7)
    test = load(tmp_path / "a" / "hidden" / "floyd_warshall_test.npz")
    assert test["input_A"].shape == (32, 64, 64)
    sampler, _ = samplers.build_sampler("floyd_warshall", seed=3, num_samples=32, length=64)
    expected = sampler.next(batch_size=None)
    assert np.array_equal(test["input_A"], expected.features.inputs[1].data)
    assert np.array_equal(test["output_Pi"], expected.outputs[0].data)
    flags = (tmp_path / "a" / "public" / "CLRS30" / "train_flags.txt").read_text().splitlines()
    assert not [line for line in flags if line.startswith("--")]


# --------------------------------------------------------------------------- grader


def grade(workspace, hidden):
    return grade_task(TASK, workspace, hidden)


def submission(workspace, predict_body: str, *, init: str = "pass"):
    """A workspace whose baselines.py has a BaselineModel that predicts with ``predict_body`` (given
    ``features``; returns Pi), beside the three files train.py writes."""
    from clrs._src import specs

    (workspace / "baselines.py").write_text(textwrap.dedent(f"""
        import numpy as np
        from clrs._src import probing

        class BaselineModel:
            def __init__(self, spec, dummy_trajectory, **params):
                self.params = params
                {init}

            def init(self, features, seed):
                pass

            def restore_model(self, file_name, only_load_processor=False):
                self.restored = open("checkpoints/" + file_name, "rb").read()

            def predict(self, rng_key, features, algorithm_index=None):
                pi = self.pointers(features)
                return {{"Pi": probing.DataPoint(name="Pi", location="edge", type_="pointer", data=pi)}}, None

            def pointers(self, features):
        """) + textwrap.indent(textwrap.dedent(predict_body), " " * 12))
    checkpoints = workspace / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    (checkpoints / "best.pkl").write_bytes(pickle.dumps({"params": {}}))
    (checkpoints / "spec_list.pkl").write_bytes(pickle.dumps([specs.SPECS["floyd_warshall"]]))
    (checkpoints / "model_params.pkl").write_bytes(pickle.dumps(
        {"processor_factory": ("triplet_gmpnn", True, 8, 1), "hidden_dim": 128, "checkpoint_path": "elsewhere"}))


def oracle(workspace, hidden, *, wrong_fraction: float = 0.0):
    """A BaselineModel that looks the answer up in a copy of the truth the test puts in the workspace
    (matched by graph), with a given fraction of pointers wrong."""
    np.save(workspace / "truth_A.npy", load(hidden / "floyd_warshall_test.npz")["input_A"])
    np.save(workspace / "truth_Pi.npy", load(hidden / "floyd_warshall_test.npz")["output_Pi"])
    submission(workspace, f"""
        truth_A, truth = np.load("truth_A.npy"), np.load("truth_Pi.npy")
        graphs = features.inputs[1].data
        rows = [next(i for i in range(len(truth_A)) if np.array_equal(truth_A[i], g)) for g in graphs]
        pi = truth[rows].copy()
        wrong = np.random.default_rng(0).random(pi.shape) < {wrong_fraction}
        pi[wrong] = (pi[wrong] + 1) % pi.shape[-1]
        return pi
    """)


def test_grader_scores_the_restored_model_on_the_hidden_graphs(data, tmp_path):
    _, hidden = data
    oracle(tmp_path, hidden)
    assert grade(tmp_path, hidden) == 1.0
    oracle(tmp_path, hidden, wrong_fraction=0.25)
    # 8 graphs of 8 nodes, predicted 4 at a time with the same mask: 256 draws, a standard error of 0.027
    assert grade(tmp_path, hidden) == pytest.approx(0.75, abs=0.06)


def test_the_test_graphs_are_predicted_a_few_at_a_time(data, tmp_path):
    """32 graphs of 64 nodes at once outgrew the task's 16 GB on the CPU, so full could not be
    graded: the measure step predicts at most 4 at a time, each graph once and in order."""
    _, hidden = data
    bigger = tmp_path / "hidden"
    bigger.mkdir()
    for name in ("floyd_warshall_test_inputs.npz", "floyd_warshall_test.npz"):
        arrays = load(hidden / name)
        np.savez(bigger / name, **{key: np.concatenate([value] * 3, axis=1 if key.startswith("hint_") else 0)
                                   if value.ndim else value for key, value in arrays.items()})
    workspace = tmp_path / "ws"
    workspace.mkdir()
    oracle(workspace, bigger)
    body = (workspace / "baselines.py").read_text()
    (workspace / "baselines.py").write_text(body.replace(
        "graphs = features.inputs[1].data\n", "graphs = features.inputs[1].data\n"
        "            assert len(graphs) <= 4, f'{len(graphs)} graphs at once'\n"))
    assert "graphs at once" in (workspace / "baselines.py").read_text()
    assert len(load(bigger / "floyd_warshall_test.npz")["output_Pi"]) == 3 * len(load(hidden / "floyd_warshall_test.npz")["output_Pi"])
    assert grade(workspace, bigger) == 1.0


def test_the_measure_step_reads_no_compilation_cache(data, tmp_path, monkeypatch):
    """The attack: an agent plants an executable in a compilation cache (the one mini's training
    uses, or any folder it names) under the key of the grader's computation. The measure step turns
    JAX's persistent cache off before any agent code is imported, even with the variable set."""
    public, hidden = data
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(public / "CLRS30" / "xla_cache"))
    submission(tmp_path, """
        import jax
        assert not jax.config.jax_enable_compilation_cache, "the compilation cache is on"
        assert jax.config.jax_compilation_cache_dir is None, jax.config.jax_compilation_cache_dir
        n = features.inputs[0].data.shape[1]
        return np.zeros((len(features.lengths), n, n))
    """)
    assert grade(tmp_path, hidden) == pytest.approx(float(np.mean(load(hidden / "floyd_warshall_test.npz")["output_Pi"] == 0)))


def test_a_model_that_reads_the_hints_finds_no_answer(data, tmp_path):
    """The attack: the last Pi_h hint step is nearly the answer in CLRS's own data; the grader's copy
    of the features carries only the first step, so copying the last step scores as little as zeros."""
    _, hidden = data
    submission(tmp_path, """
        hints = {hint.name: hint.data for hint in features.hints}
        return hints["Pi_h"][-1]
    """)
    last = grade(tmp_path, hidden)
    zeros = float(np.mean(load(hidden / "floyd_warshall_test.npz")["output_Pi"] == 0))
    assert last == pytest.approx(zeros)


def test_the_grader_rebuilds_the_processor_from_the_saved_tuple(data, tmp_path):
    """model_params.pkl holds (processor_type, use_ln, nb_triplet_fts, nb_heads); BaselineModel gets
    the factory made from it and the checkpoints folder, as in the original's evaluator."""
    _, hidden = data
    submission(tmp_path, """
        assert callable(self.params["processor_factory"]), self.params["processor_factory"]
        assert self.params["checkpoint_path"] == "checkpoints", self.params["checkpoint_path"]
        n = features.inputs[0].data.shape[1]
        return np.zeros((len(features.lengths), n, n)) + np.arange(n)[None, :, None]
    """)
    truth = load(hidden / "floyd_warshall_test.npz")["output_Pi"]
    rows = np.arange(truth.shape[-1])[None, :, None]  # Pi[i, j] = i: right where i precedes j, or j is i
    assert grade(tmp_path, hidden) == pytest.approx(float(np.mean(truth == rows)))


@pytest.mark.parametrize("breakage, message", [
    ("no checkpoint", "checkpoints/best.pkl was not written"),
    ("no model params", "checkpoints/model_params.pkl: not found"),
    ("bad model params", "model_params.pkl cannot be read"),
    ("import error", "baselines.py: importing it failed: ZeroDivisionError"),
    ("init raises", "cannot be built .* KeyError"),
    ("predict raises", "predict of baselines.py failed .* ValueError"),
    ("wrong shape", "returned Pi of shape"),
    ("out of range", "node indices 0..7"),
    ("fractional", "node indices 0..7"),
])
def test_grader_rejects_broken_submissions(data, tmp_path, breakage, message):
    _, hidden = data
    body = "n = features.inputs[0].data.shape[1]\nreturn np.zeros((len(features.lengths), n, n))\n"
    init = "pass"
    if breakage == "init raises":
        init = "params['missing']"
    elif breakage == "predict raises":
        body = "raise ValueError('no')\n"
    elif breakage == "wrong shape":
        body = "return np.zeros((len(features.lengths), 3))\n"
    elif breakage == "out of range":
        body = body.replace("np.zeros", "99 + np.zeros")
    elif breakage == "fractional":
        body = body.replace("np.zeros", "0.5 + np.zeros")
    submission(tmp_path, body, init=init)
    checkpoints = tmp_path / "checkpoints"
    if breakage == "no checkpoint":
        (checkpoints / "best.pkl").unlink()
    elif breakage == "no model params":
        (checkpoints / "model_params.pkl").unlink()
    elif breakage == "bad model params":
        (checkpoints / "model_params.pkl").write_bytes(pickle.dumps({"processor_factory": "triplet_gmpnn"}))
    elif breakage == "import error":
        (tmp_path / "baselines.py").write_text("1 / 0\n")
    with pytest.raises(InvalidSubmission, match=message):
        grade(tmp_path, hidden)


def test_the_problem_statement_points_at_the_right_lines():
    """The statement names get_triplet_msgs's line in processors.py and BaselineModel's in train.py,
    as the original does; an edit to either file must not leave them pointing elsewhere."""
    import re

    from tests.tasks.support import ASSETS, load_spec

    description = load_spec(TASK)["description"]
    pointers = re.findall(r"line (\d+) of (\w+\.py)", description)
    assert {file for _, file in pointers} == {"processors.py", "train.py"}
    for line, file in pointers:
        text = (ASSETS / TASK / "env" / file).read_text().splitlines()[int(line) - 1]
        expected = "def get_triplet_msgs(" if file == "processors.py" else "BaselineModel("
        assert expected in text, f"line {line} of {file} is {text!r}"

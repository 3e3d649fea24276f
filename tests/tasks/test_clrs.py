"""CLRS task assets: Floyd-Warshall samples in CLRS's feature layout, the checkpoint grader on good
and broken submissions, and the full recipe's download.

The starter and reference runs are checked once, by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import shutil
import textwrap

import numpy as np
import pytest

from pytest_mlab.errors import DataError
from pytest_mlab.grading import InvalidSubmission
from tests.data.fakes import FileServer
from tests.tasks.test_smoke_tasks import ASSETS, grade as grade_task, load_function, prepare, tree_digest

TASK = "clrs"
FEATURES = {"input_pos": 2, "input_A": 3, "input_adj": 3, "output_Pi": 3, "hint_Pi_h": 4, "hint_D": 4,
            "hint_msk": 4, "hint_k": 3, "lengths": 1}


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("clrs"))


def load(path) -> dict:
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def test_mini_has_clrs_features_and_hides_the_test_split(data):
    public, hidden = data
    assert sorted(p.name for p in (public / "CLRS30").iterdir()) == ["floyd_warshall_train.npz", "floyd_warshall_val.npz"]
    assert sorted(p.name for p in hidden.iterdir()) == ["floyd_warshall_test.npz",
                                                        "floyd_warshall_test_inputs.npz"]
    inputs = load(hidden / "floyd_warshall_test_inputs.npz")
    assert sorted(inputs) == ["input_A", "input_adj", "input_pos"], "the measure step gets the test inputs alone"
    for name, array in inputs.items():
        assert np.array_equal(array, load(hidden / "floyd_warshall_test.npz")[name])
    train, test = load(public / "CLRS30" / "floyd_warshall_train.npz"), load(hidden / "floyd_warshall_test.npz")
    for split in (train, test):
        assert {name: array.ndim for name, array in split.items()} == FEATURES
        steps, batch, n = split["hint_D"].shape[:3]
        assert split["input_A"].shape == (batch, n, n) and steps == n + 1 and (split["lengths"] == n + 1).all()
    assert test["input_A"].shape[1] > train["input_A"].shape[1], "test graphs are larger (out of distribution)"


def test_output_pointers_are_shortest_path_predecessors(data):
    from scipy.sparse.csgraph import shortest_path

    test = load(data[1] / "floyd_warshall_test.npz")
    for weights, adj, pi in zip(test["input_A"][:10], test["input_adj"][:10], test["output_Pi"][:10]):
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
    first = [tree_digest(p) for p in prepare(TASK, tmp_path / "a")]
    assert first == [tree_digest(p) for p in prepare(TASK, tmp_path / "b")]
    assert first != [tree_digest(p) for p in prepare(TASK, tmp_path / "c", seed=1)]


# --------------------------------------------------------------------------- grader


def grade(workspace, hidden):
    return grade_task(TASK, workspace, hidden)


def oracle_model(workspace, answers_path, *, wrong_fraction: float = 0.0):
    """A model.py that looks the answer up (by graph, in a copy the test puts in the workspace)
    and gets a given fraction of pointers wrong."""
    shutil.copy(answers_path, workspace / "truth.npz")
    (workspace / "model.py").write_text(textwrap.dedent(f"""
        import numpy as np
        def predict(params, inputs):
            truth = np.load("truth.npz")
            assert np.array_equal(truth["input_A"], inputs["input_A"])
            pi = truth["output_Pi"].copy()
            wrong = np.random.default_rng(0).random(pi.shape) < {wrong_fraction}
            pi[wrong] = (pi[wrong] + 1) % pi.shape[-1]
            return pi * params["scale"].astype(int)
    """))
    (workspace / "checkpoints").mkdir(exist_ok=True)
    np.savez(workspace / "checkpoints" / "params.npz", scale=np.array(1))


def test_grader_scores_the_checkpoint_on_the_hidden_graphs(data, tmp_path):
    _, hidden = data
    oracle_model(tmp_path, hidden / "floyd_warshall_test.npz")
    assert grade(tmp_path, hidden) == 1.0
    oracle_model(tmp_path, hidden / "floyd_warshall_test.npz", wrong_fraction=0.25)
    assert grade(tmp_path, hidden) == pytest.approx(0.75, abs=0.02)


def test_grader_runs_the_starter_model_with_its_own_parameters(data, tmp_path):
    import jax

    shutil.copy(ASSETS / TASK / "env" / "model.py", tmp_path / "model.py")
    model = load_function(TASK, "env/model.py:init").__globals__
    params = model["init"](jax.random.PRNGKey(0))
    (tmp_path / "checkpoints").mkdir()
    np.savez(tmp_path / "checkpoints" / "params.npz", **{k: np.asarray(v) for k, v in params.items()})
    assert 0.0 <= grade(tmp_path, data[1]) < 0.9


@pytest.mark.parametrize("breakage, message", [
    ("no checkpoint", "checkpoints/params.npz was not written"),
    ("no model", "model.py: not found"),
    ("bad checkpoint", "cannot be read as a numpy .npz"),
    ("import error", "importing it failed: ZeroDivisionError"),
    ("no predict", "has no function predict"),
    ("predict raises", "predict\\(params, inputs\\) failed .* KeyError"),
    ("wrong shape", "returned shape"),
    ("out of range", "integer node indices"),
])
def test_grader_rejects_broken_submissions(data, tmp_path, breakage, message):
    _, hidden = data
    oracle_model(tmp_path, hidden / "floyd_warshall_test.npz")
    model = tmp_path / "model.py"
    checkpoint = tmp_path / "checkpoints" / "params.npz"
    if breakage == "no checkpoint":
        checkpoint.unlink()
    elif breakage == "no model":
        model.unlink()
    elif breakage == "bad checkpoint":
        checkpoint.write_bytes(b"not an archive")
    elif breakage == "import error":
        model.write_text("1 / 0\n")
    elif breakage == "no predict":
        model.write_text("def forward(params, inputs):\n    return None\n")
    elif breakage == "predict raises":
        model.write_text("def predict(params, inputs):\n    return params['missing']\n")
    elif breakage == "wrong shape":
        model.write_text("import numpy as np\ndef predict(params, inputs):\n    return np.zeros(inputs['input_A'].shape[:2], int)\n")
    elif breakage == "out of range":
        model.write_text("import numpy as np\ndef predict(params, inputs):\n    return np.full(inputs['input_A'].shape, 99)\n")
    with pytest.raises(InvalidSubmission, match=message):
        grade(tmp_path, hidden)


# --------------------------------------------------------------------------- full recipe


def test_full_recipe_rejects_a_truncated_download(tmp_path, monkeypatch):
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "CLRS30_v1.0.0.tar.gz").write_bytes(b"x" * 500)
    recipe = load_function(TASK, "prepare.py:full")
    with FileServer(tmp_path / "source") as server:
        monkeypatch.setitem(recipe.__globals__, "URL", server.url("CLRS30_v1.0.0.tar.gz"))
        monkeypatch.setitem(recipe.__globals__, "SIZE", 1000)
        with pytest.raises(DataError, match="CLRS30_v1.0.0.tar.gz"):
            recipe(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    assert not (tmp_path / "downloads" / "CLRS30_v1.0.0.tar.gz").exists()


def test_full_recipe_names_tensorflow_datasets_when_it_is_missing(tmp_path, monkeypatch):
    import sys

    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "CLRS30_v1.0.0.tar.gz").write_bytes(b"y" * 1000)
    recipe = load_function(TASK, "prepare.py:full")
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)  # import fails as when not installed
    with FileServer(tmp_path / "source") as server:
        monkeypatch.setitem(recipe.__globals__, "URL", server.url("CLRS30_v1.0.0.tar.gz"))
        with pytest.raises(DataError, match="pip install tensorflow-datasets"):
            recipe(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")

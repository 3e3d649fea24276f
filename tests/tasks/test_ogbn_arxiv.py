"""ogbn-arxiv task assets: OGB's raw layout under networks/ (loadable offline by ogb itself), hidden
test labels, the grader on bad submissions, the starter's model as in the original, and the full
recipe against a local copy of OGB's arxiv.zip.

The starter and reference runs are checked once, by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.errors import DataError
from pytest_mlab.task_api import InvalidSubmission
from tests.data.fakes import FileServer
from tests.shared_data import shared_mini
from tests.tasks.support import grade as grade_task, load_function, prepare, tree_digest

# The fast tier (-m "not slow") leaves this module out: it prepares the task's citation graph and imports
# torch-geometric.
pytestmark = pytest.mark.slow

TASK = "ogbn-arxiv"
ROOT = "networks/ogbn_arxiv"  # OGB's folder for the dataset under the original's root, networks/
STARTER = pathlib.Path(__file__).resolve().parents[2] / "task_assets" / TASK / "env" / "train.py"
RAW = ["edge", "node-feat", "node-label", "node_year", "num-edge-list", "num-node-list"]


def read(path) -> np.ndarray:
    return pd.read_csv(path, header=None).to_numpy()


@pytest.fixture(scope="module")
def data():
    return shared_mini(TASK)


def test_mini_has_ogbs_raw_layout_and_hides_test_labels(data):
    public, hidden = data
    root = public / ROOT
    assert sorted(p.name for p in (root / "raw").iterdir()) == sorted(f"{name}.csv.gz" for name in RAW)
    assert (root / "RELEASE_v1.txt").is_file()
    n = int(read(root / "raw" / "num-node-list.csv.gz")[0, 0])
    edges = read(root / "raw" / "edge.csv.gz")
    assert edges.shape == (int(read(root / "raw" / "num-edge-list.csv.gz")[0, 0]), 2) and edges.max() < n
    assert read(root / "raw" / "node-feat.csv.gz").shape == (n, 128)
    splits = {name: read(root / "split" / "time" / f"{name}.csv.gz")[:, 0] for name in ("train", "valid", "test")}
    assert sorted(np.concatenate(list(splits.values()))) == list(range(n))
    labels = read(root / "raw" / "node-label.csv.gz")[:, 0]
    assert (labels[splits["test"]] == -1).all()
    assert ((labels[splits["train"]] >= 0) & (labels[splits["train"]] < 40)).all()
    answers = pd.read_csv(hidden / "answers.csv")
    assert list(answers.columns) == ["id", "label"] and sorted(answers["id"]) == sorted(splits["test"])
    years = read(root / "raw" / "node_year.csv.gz")[:, 0]
    assert years[splits["train"]].max() < 2018 <= years[splits["test"]].min()


@pytest.mark.slow
def test_ogb_loads_the_mini_data_offline(data, tmp_path):
    """ogb's own loader processes the files (a download attempt would fail: nothing is reachable)."""
    import shutil

    shutil.copytree(data[0], tmp_path, dirs_exist_ok=True)
    script = ("import torch\n"
              "from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr\n"
              "from torch_geometric.data.storage import GlobalStorage\n"
              "torch.serialization.add_safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage])\n"
              "from ogb.nodeproppred import PygNodePropPredDataset\n"
              "d = PygNodePropPredDataset(name='ogbn-arxiv', root='networks')\n"
              "s = d.get_idx_split()\n"
              "print(d.num_classes, d[0].num_nodes, len(s['test']), int((d[0].y[s['test']] == -1).sum()))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stderr
    classes, nodes, tests, hidden = map(int, done.stdout.split()[-4:])
    assert (classes, nodes) == (40, 10000) and tests == hidden > 0


def test_mini_is_deterministic_and_seeded(data, tmp_path):
    first = [tree_digest(p) for p in data]  # the session's shared copy, prepared by another call
    assert first == [tree_digest(p) for p in prepare(TASK, tmp_path / "b")]
    assert first != [tree_digest(p) for p in prepare(TASK, tmp_path / "c", seed=1)]


def grade(workspace, hidden):
    return grade_task(TASK, workspace, hidden)


def predictions(answers: pd.DataFrame) -> pd.DataFrame:
    """Right for every third node, wrong otherwise."""
    wrong = (answers["label"] + 1) % 40
    return pd.DataFrame({"id": answers["id"], "label": answers["label"].where(answers.index % 3 == 0, wrong)})


def test_grader_scores_by_id_not_position(data, tmp_path):
    _, hidden = data
    answers = pd.read_csv(hidden / "answers.csv")
    submission = predictions(answers)
    expected = float(np.mean(submission["label"] == answers["label"]))
    submission.sample(frac=1.0, random_state=3).to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == pytest.approx(expected)
    answers.to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == 1.0


def test_grader_counts_labels_outside_the_classes_as_wrong(data, tmp_path):
    """The starter's model has 172 outputs, so it may predict a class above 39: wrong, not invalid."""
    _, hidden = data
    answers = pd.read_csv(hidden / "answers.csv")
    submission = predictions(answers)
    submission.loc[submission.index % 3 == 0, "label"] = 171
    submission.to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == pytest.approx(float(np.mean(submission["label"] == answers["label"])))
    assert grade(tmp_path, hidden) == 0.0


def test_mini_areas_are_unevenly_sized(data):
    """A few large subject areas and many small ones, as on arXiv."""
    _, hidden = data
    counts = np.bincount(pd.read_csv(hidden / "answers.csv")["label"], minlength=40)
    assert counts.argmax() == 0 and counts[0] > 10 * counts[20:].mean()


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: f.rename(columns={"label": "y_pred"}), "missing column 'label'"),
    (lambda f: f.iloc[1:], "rows; expected"),
    (lambda f: f.assign(label=f["label"].where(f.index != 2)), "column 'label' has 1 missing, NaN"),
    (lambda f: pd.concat([f, f.iloc[:1]]), "duplicate id"),
    (lambda f: f.assign(label=f["label"] + 0.5), "integer class indices"),
])
def test_grader_rejects_corrupted_submissions(data, tmp_path, corrupt, message):
    _, hidden = data
    corrupt(predictions(pd.read_csv(hidden / "answers.csv"))).to_csv(tmp_path / "submission.csv", index=False)
    with pytest.raises(InvalidSubmission, match=message):
        grade(tmp_path, hidden)


# --------------------------------------------------------------------------- full recipe


def fake_arxiv_zip(public, hidden, dest) -> bytes:
    """OGB's arxiv.zip layout (arxiv/raw/..., arxiv/split/time/...) built from the mini data, labels restored."""
    root = public / ROOT
    answers = pd.read_csv(hidden / "answers.csv")
    labels = read(root / "raw" / "node-label.csv.gz")[:, 0].copy()
    labels[answers["id"]] = answers["label"]
    restored = dest.with_name("node-label.csv.gz")
    pd.DataFrame(labels).to_csv(restored, header=False, index=False)
    with zipfile.ZipFile(dest, "w") as bundle:
        for path in sorted(root.rglob("*")):
            name = "arxiv/" + path.relative_to(root).as_posix()
            if path.name == "node-label.csv.gz":
                bundle.write(restored, name)
            elif path.is_file():
                bundle.write(path, name)
    return dest.read_bytes()


def run_full(tmp_path, monkeypatch, data, truncate: int = 0):
    (tmp_path / "source").mkdir()
    (tmp_path / "build").mkdir()
    content = fake_arxiv_zip(*data, tmp_path / "build" / "arxiv.zip")
    (tmp_path / "source" / "arxiv.zip").write_bytes(content)
    if truncate:
        (tmp_path / "source" / "arxiv.zip").write_bytes(content[:-truncate])
    recipe = load_function(TASK, "prepare.py:full")
    with FileServer(tmp_path / "source") as server:
        monkeypatch.setitem(recipe.__globals__, "URL", server.url("arxiv.zip"))
        recipe(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    return tmp_path / "public", tmp_path / "hidden"


def test_full_recipe_writes_the_same_layout_and_hides_test_labels(tmp_path, monkeypatch, data):
    public, hidden = run_full(tmp_path, monkeypatch, data)
    assert pd.read_csv(hidden / "answers.csv").equals(pd.read_csv(data[1] / "answers.csv"))
    for relative in ("raw/node-label.csv.gz", "raw/edge.csv.gz", "split/time/test.csv.gz"):
        assert (read(public / ROOT / relative) == read(data[0] / ROOT / relative)).all()


def test_full_recipe_rejects_a_truncated_download(tmp_path, monkeypatch, data):
    with pytest.raises(DataError, match="arxiv.zip"):
        run_full(tmp_path, monkeypatch, data, truncate=1000)
    assert not (tmp_path / "hidden" / "answers.csv").exists()


# --------------------------------------------------------------------------- the starter


def starter_constants() -> dict:
    tree = ast.parse(STARTER.read_text())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)}


def test_starter_keeps_the_original_model_and_training():
    """The original starter's settings (MLAgentBench ogbn-arxiv env/train.py)."""
    constants = starter_constants()
    assert {name: constants[name] for name in ("EPOCHS", "HIDDEN", "OUTPUTS", "LAYERS", "DROPOUT", "LEARNING_RATE",
                                               "BATCH_SIZE", "EVAL_BATCH_SIZE")} == {
        "EPOCHS": 4, "HIDDEN": 16, "OUTPUTS": 172, "LAYERS": 2, "DROPOUT": 0.0, "LEARNING_RATE": 1.0,
        "BATCH_SIZE": 1024, "EVAL_BATCH_SIZE": 4096}
    source = STARTER.read_text()
    assert 'root="networks"' in source and "F.nll_loss" in source and "torch.optim.Adam(" in source


@pytest.mark.slow
def test_starter_mlp_has_batch_norm_and_returns_log_probabilities():
    script = ("import runpy, sys, torch\n"
              "ns = runpy.run_path(sys.argv[1], run_name='setup_only')\n"
              "model = ns['MLP'](128, ns['HIDDEN'], ns['OUTPUTS'], ns['LAYERS'], ns['DROPOUT']).eval()\n"
              "layers = [(type(m).__name__, tuple(m.weight.shape)) for m in model.modules() if hasattr(m, 'weight')]\n"
              "out = model(torch.randn(5, 128))\n"
              "print(layers, tuple(out.shape), bool(torch.allclose(out.exp().sum(1), torch.ones(5))))\n")
    done = subprocess.run([sys.executable, "-c", script, str(STARTER)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == ("[('Linear', (16, 128)), ('BatchNorm1d', (16,)), ('Linear', (172, 16))] "
                                            "(5, 172) True")

"""ogbn-arxiv task assets: OGB's raw layout (loadable offline by ogb itself), hidden test labels,
the grader on bad submissions, and the full recipe against a local copy of OGB's arxiv.zip.

The starter and reference runs are checked once, by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.errors import DataError
from pytest_mlab.grading import InvalidSubmission
from tests.data.fakes import FileServer
from tests.tasks.test_smoke_tasks import grade as grade_task, load_function, prepare, tree_digest

TASK = "ogbn-arxiv"
RAW = ["edge", "node-feat", "node-label", "node_year", "num-edge-list", "num-node-list"]


def read(path) -> np.ndarray:
    return pd.read_csv(path, header=None).to_numpy()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("ogbn"))


def test_mini_has_ogbs_raw_layout_and_hides_test_labels(data):
    public, hidden = data
    root = public / "ogbn_arxiv"
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
              "d = PygNodePropPredDataset(name='ogbn-arxiv', root='.')\n"
              "s = d.get_idx_split()\n"
              "print(d.num_classes, d[0].num_nodes, len(s['test']), int((d[0].y[s['test']] == -1).sum()))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stderr
    classes, nodes, tests, hidden = map(int, done.stdout.split()[-4:])
    assert (classes, nodes) == (40, 3000) and tests == hidden > 0


def test_mini_is_deterministic_and_seeded(tmp_path):
    first = [tree_digest(p) for p in prepare(TASK, tmp_path / "a")]
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


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: f.rename(columns={"label": "y_pred"}), "missing column 'label'"),
    (lambda f: f.iloc[1:], "rows; expected"),
    (lambda f: f.assign(label=f["label"].where(f.index != 2)), "column 'label' has 1 missing, NaN"),
    (lambda f: pd.concat([f, f.iloc[:1]]), "duplicate id"),
    (lambda f: f.assign(label=f["label"] + 0.5), "class indices 0..39"),
    (lambda f: f.assign(label=40), "class indices 0..39"),
])
def test_grader_rejects_corrupted_submissions(data, tmp_path, corrupt, message):
    _, hidden = data
    corrupt(predictions(pd.read_csv(hidden / "answers.csv"))).to_csv(tmp_path / "submission.csv", index=False)
    with pytest.raises(InvalidSubmission, match=message):
        grade(tmp_path, hidden)


# --------------------------------------------------------------------------- full recipe


def fake_arxiv_zip(public, hidden, dest) -> bytes:
    """OGB's arxiv.zip layout (arxiv/raw/..., arxiv/split/time/...) built from the mini data, labels restored."""
    root = public / "ogbn_arxiv"
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
        assert (read(public / "ogbn_arxiv" / relative) == read(data[0] / "ogbn_arxiv" / relative)).all()


def test_full_recipe_rejects_a_truncated_download(tmp_path, monkeypatch, data):
    with pytest.raises(DataError, match="arxiv.zip"):
        run_full(tmp_path, monkeypatch, data, truncate=1000)
    assert not (tmp_path / "hidden" / "answers.csv").exists()

"""cifar10 task assets: the mini data's CIFAR layout under data/, the grader on bad submissions, the
starter's settings as in the original, the full recipe.

The starter and reference runs are checked once, by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import ast
import hashlib
import io
import pathlib
import pickle
import tarfile

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.errors import DataError
from pytest_mlab.task_api import InvalidSubmission
from tests.data.fakes import FileServer
from tests.shared_data import shared_mini
from tests.tasks.support import grade as grade_task, load_function, prepare, tree_digest

# The fast tier (-m "not slow") leaves this module out: it prepares the task's image batches and imports
# torch.
pytestmark = pytest.mark.slow

TASK = "cifar10"
FOLDER = "cifar-10-batches-py"
DATA = f"data/{FOLDER}"  # where torchvision's CIFAR10(root="./data") keeps it, as in the original
STARTER = pathlib.Path(__file__).resolve().parents[2] / "task_assets" / TASK / "env" / "train.py"


def unpickle(path):
    with open(path, "rb") as handle:
        return pickle.load(handle, encoding="bytes")


@pytest.fixture(scope="module")
def data():
    return shared_mini(TASK)


def test_mini_has_the_cifar_python_layout(data):
    public, hidden = data
    assert [p.relative_to(public).as_posix() for p in public.iterdir()] == ["data"]
    assert sorted(p.name for p in (public / DATA).iterdir()) == sorted(
        [f"data_batch_{i}" for i in range(1, 6)] + ["batches.meta", "test_batch"])
    meta = unpickle(public / DATA / "batches.meta")
    assert len(meta[b"label_names"]) == 10 and meta[b"num_vis"] == 3072
    for i in range(1, 6):
        batch = unpickle(public / DATA / f"data_batch_{i}")
        assert set(batch) == {b"batch_label", b"labels", b"data", b"filenames"}
        assert batch[b"data"].dtype == np.uint8 and batch[b"data"].shape[1] == 3072
        assert len(batch[b"labels"]) == len(batch[b"data"]) == len(batch[b"filenames"])
        assert set(batch[b"labels"]) <= set(range(10))
    test = unpickle(public / DATA / "test_batch")
    assert b"labels" not in test, "test labels must stay hidden"
    answers = pd.read_csv(hidden / "answers.csv")
    assert list(answers.columns) == ["id", "label"]
    assert answers["id"].tolist() == list(range(len(test[b"data"])))


def test_mini_is_deterministic_and_seeded(tmp_path):
    first = [tree_digest(p) for p in prepare(TASK, tmp_path / "a")]
    assert first == [tree_digest(p) for p in prepare(TASK, tmp_path / "b")]
    assert first != [tree_digest(p) for p in prepare(TASK, tmp_path / "c", seed=1)]


def probabilities(answers: pd.DataFrame, correct_fraction: float, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    values = rng.dirichlet(np.ones(10), size=len(answers))
    right = np.flatnonzero(rng.random(len(answers)) < correct_fraction)
    values[right, answers["label"].to_numpy()[right]] += 2.0
    frame = pd.DataFrame(values / values.sum(axis=1, keepdims=True), columns=[str(c) for c in range(10)])
    frame.insert(0, "id", answers["id"])
    return frame


def grade(workspace, hidden):
    return grade_task(TASK, workspace, hidden)


def test_grader_scores_by_id_not_position(data, tmp_path):
    _, hidden = data
    answers = pd.read_csv(hidden / "answers.csv")
    submission = probabilities(answers, 0.6)
    expected = float(np.mean(submission[[str(c) for c in range(10)]].to_numpy().argmax(1) == answers["label"]))
    submission.to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == pytest.approx(expected)
    assert 0.5 < expected < 0.8
    submission.sample(frac=1.0, random_state=1).to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == pytest.approx(expected)


def test_grader_scores_logits_like_probabilities(data, tmp_path):
    """Only each row's largest value counts, as in the original: raw scores, negative ones included, are valid."""
    _, hidden = data
    submission = probabilities(pd.read_csv(hidden / "answers.csv"), 0.6)
    submission.to_csv(tmp_path / "submission.csv", index=False)
    expected = grade(tmp_path, hidden)
    columns = [str(c) for c in range(10)]
    submission.assign(**{c: np.log(submission[c]) - 3.0 for c in columns}).to_csv(tmp_path / "submission.csv",
                                                                                   index=False)
    assert grade(tmp_path, hidden) == pytest.approx(expected)


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: f.drop(columns="7"), "missing column '7'"),
    (lambda f: f.iloc[:-3], "has 997 rows; expected 1000"),
    (lambda f: f.assign(**{"3": f["3"].where(f.index != 5)}), "column '3' has 1 missing, NaN or infinite value"),
    (lambda f: pd.concat([f.iloc[:-1], f.iloc[:1]]), "duplicate id 0"),
    (lambda f: f.assign(id=f["id"] + 1), "not in data/cifar-10-batches-py/test_batch: 1000"),
])
def test_grader_rejects_corrupted_submissions(data, tmp_path, corrupt, message):
    _, hidden = data
    corrupt(probabilities(pd.read_csv(hidden / "answers.csv"), 0.5)).to_csv(tmp_path / "submission.csv", index=False)
    with pytest.raises(InvalidSubmission, match=message):
        grade(tmp_path, hidden)


# --------------------------------------------------------------------------- full recipe


def fake_archive(path) -> bytes:
    """A cifar-10-python.tar.gz with the real member names and tiny batches."""
    rng = np.random.default_rng(0)
    members = {f"data_batch_{i}": {b"labels": [1, 2], b"data": rng.integers(0, 255, (2, 3072), dtype=np.uint8)}
               for i in range(1, 6)}
    members["test_batch"] = {b"labels": [3, 4, 5], b"data": rng.integers(0, 255, (3, 3072), dtype=np.uint8)}
    members["batches.meta"] = {b"label_names": [b"a"] * 10}
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            raw = pickle.dumps(content, protocol=2)
            info = tarfile.TarInfo(f"{FOLDER}/{name}")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    return path.read_bytes()


def run_full(tmp_path, monkeypatch, served: bytes, expected: bytes, cut: int = 0):
    """The full recipe against a loopback server holding ``served`` where the real archive would be."""
    (tmp_path / "source").mkdir()
    (tmp_path / "source" / "cifar-10-python.tar.gz").write_bytes(served)
    recipe = load_function(TASK, "prepare.py:full")
    with FileServer(tmp_path / "source", cut={"cifar-10-python.tar.gz": cut}) as server:
        monkeypatch.setitem(recipe.__globals__, "URL", server.url("cifar-10-python.tar.gz"))
        monkeypatch.setitem(recipe.__globals__, "SHA256", hashlib.sha256(expected).hexdigest())
        monkeypatch.setitem(recipe.__globals__, "SIZE", len(expected))
        recipe(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    return tmp_path / "public", tmp_path / "hidden"


def test_full_recipe_hides_the_test_labels(tmp_path, monkeypatch):
    content = fake_archive(tmp_path / "archive.tar.gz")
    public, hidden = run_full(tmp_path, monkeypatch, content, content, cut=1)  # an interrupted transfer resumes
    assert b"labels" not in unpickle(public / DATA / "test_batch")
    assert unpickle(public / DATA / "data_batch_3")[b"labels"] == [1, 2]
    assert pd.read_csv(hidden / "answers.csv").to_dict("list") == {"id": [0, 1, 2], "label": [3, 4, 5]}


def test_full_recipe_rejects_a_truncated_download(tmp_path, monkeypatch):
    content = fake_archive(tmp_path / "archive.tar.gz")
    with pytest.raises(DataError, match="cifar-10-python.tar.gz"):
        run_full(tmp_path, monkeypatch, content[:-100], content)
    assert not (tmp_path / "public" / DATA / "test_batch").exists()


# --------------------------------------------------------------------------- the starter


def test_starter_keeps_the_original_training():
    """The original starter's settings (MLAgentBench cifar10 env/train.py): SGD at 0.1 with momentum
    0.9, 5 epochs of batches of 128 with the last partial batch dropped, all training images."""
    tree = ast.parse(STARTER.read_text())
    constants = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
                 if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)}
    assert {name: constants.get(name) for name in ("EPOCHS", "BATCH_SIZE", "LEARNING_RATE", "DATA")} == {
        "EPOCHS": 5, "BATCH_SIZE": 128, "LEARNING_RATE": 0.1, "DATA": DATA}
    source = STARTER.read_text()
    assert "momentum=0.9" in source and "len(labels) // BATCH_SIZE" in source
    assert "VALID" not in source.upper(), "the original trains on every training image"

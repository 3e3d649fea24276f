"""The imdb task's data recipes, grader and skeleton starter (the reference runs in the main job)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.task_api import InvalidSubmission
from tests.shared_data import shared_mini
from tests.tasks.support import (grade as grade_task, load_function, load_spec, make_workspace, prepare,
                                 tree_digest)

# The fast tier (-m "not slow") leaves this module out: it prepares the task's reviews and tokenizer and
# imports transformers.
pytestmark = pytest.mark.slow

TASK = "imdb"
SPLITS = ("train", "test", "unsupervised")


@pytest.fixture(scope="module")
def mini_data():
    return shared_mini(TASK)


def grade(workspace: pathlib.Path, hidden: pathlib.Path) -> float:
    return grade_task(TASK, workspace, hidden)


def write(workspace: pathlib.Path, frame: pd.DataFrame) -> pathlib.Path:
    workspace.mkdir(exist_ok=True)
    frame.to_csv(workspace / "submission.csv", index=False)
    return workspace


def perfect(hidden: pathlib.Path) -> pd.DataFrame:
    answers = pd.read_csv(hidden / "answers.csv")
    return pd.DataFrame({"idx": answers["idx"], "0": 1.0 - answers["label"], "1": answers["label"] * 1.0})


# --------------------------------------------------------------------------- mini data


def test_mini_has_the_real_layout(mini_data):
    public, hidden = mini_data
    splits = {name: pd.read_parquet(public / "imdb" / f"{name}.parquet") for name in SPLITS}
    answers = pd.read_csv(hidden / "answers.csv")
    for frame in splits.values():
        assert list(frame.columns) == ["text", "label"] and frame["label"].dtype == "int64"
    train, test, unsupervised = splits["train"], splits["test"], splits["unsupervised"]
    assert set(train["label"]) == {0, 1} and train["label"].mean() == 0.5
    assert set(test["label"]) == {-1} and set(unsupervised["label"]) == {-1}, "test labels hidden, others unlabelled"
    assert len(unsupervised) == 2 * len(train), "the real dataset has twice as many unlabelled reviews"
    assert unsupervised["text"].str.fullmatch(r"[A-Z][a-z -]+\.").all(), "same format as the labelled reviews"
    assert list(answers.columns) == ["idx", "label"] and list(answers["idx"]) == list(range(len(test)))
    assert set(answers["label"]) == {0, 1}
    assert not list(public.glob("**/answers*")), "answers must stay hidden"


def test_mini_loads_as_the_hf_dataset_dict(mini_data, tmp_path):
    """The starter's load_dataset call gives imdb's split names and features."""
    from datasets import load_dataset

    files = {name: str(mini_data[0] / "imdb" / f"{name}.parquet") for name in SPLITS}
    imdb = load_dataset("parquet", data_files=files, cache_dir=str(tmp_path / "hf-cache"))
    assert sorted(imdb) == sorted(SPLITS)
    assert {name: imdb[name].column_names for name in SPLITS} == {name: ["text", "label"] for name in SPLITS}
    assert (len(imdb["train"]), len(imdb["test"]), len(imdb["unsupervised"])) == (1200, 400, 2400)


def test_mini_model_folder_loads_as_distilbert(mini_data):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    folder = mini_data[0] / "distilbert-base-uncased"
    assert json.loads((folder / "config.json").read_text())["model_type"] == "distilbert"
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=2)
    encoded = tokenizer(["A great film.", "Boring."], padding=True, return_tensors="pt")
    assert tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])[0] == "[CLS]"
    assert "[UNK]" not in tokenizer.convert_ids_to_tokens(encoded["input_ids"][0])
    assert model(**encoded).logits.shape == (2, 2)


def test_mini_is_deterministic(mini_data, tmp_path):
    public, hidden = prepare(TASK, tmp_path)
    assert tree_digest(public) == tree_digest(mini_data[0])
    assert tree_digest(hidden) == tree_digest(mini_data[1])


# --------------------------------------------------------------------------- grader


def test_perfect_flipped_and_shuffled_submissions(mini_data, tmp_path):
    hidden = mini_data[1]
    right = perfect(hidden)
    assert grade(write(tmp_path / "a", right), hidden) == 1.0
    assert grade(write(tmp_path / "b", right.sample(frac=1.0, random_state=1)), hidden) == 1.0
    flipped = right.rename(columns={"0": "1", "1": "0"})
    assert grade(write(tmp_path / "c", flipped), hidden) == 0.0
    quarter = np.arange(len(right)) < len(right) // 4
    partly = right.assign(**{"0": np.where(quarter, right["1"], right["0"]),
                             "1": np.where(quarter, right["0"], right["1"])})
    assert grade(write(tmp_path / "d", partly), hidden) == 0.75


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: f.drop(columns="1"), "missing column '1'"),
    (lambda f: f.iloc[:-3], "has 397 rows; expected 400"),
    (lambda f: f.assign(**{"0": f["0"].where(f.index != 5)}), "column '0' has 1 missing, NaN"),
    (lambda f: pd.concat([f.iloc[:-1], f.iloc[:1]]), "duplicate id 0"),
    (lambda f: f.assign(**{"1": f["1"].where(f.index != 7, np.inf)}), "column '1' has 1 missing, NaN or infinite"),
    (lambda f: f.rename(columns={"idx": "id"}), "missing column 'idx'"),
])
def test_corrupted_submissions_are_explained(mini_data, tmp_path, corrupt, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(write(tmp_path / "ws", corrupt(perfect(mini_data[1]))), mini_data[1])


def test_logits_score_like_probabilities(mini_data, tmp_path):
    """Only each row's larger column counts, as in the original's argmax: negative logits are valid."""
    hidden = mini_data[1]
    right = perfect(hidden)
    logits = right.assign(**{"0": right["0"] * 6.0 - 3.5, "1": right["1"] * 6.0 - 3.5})
    assert (logits[["0", "1"]] < 0).any().all()
    assert grade(write(tmp_path / "a", logits), hidden) == 1.0
    wrong_half = np.arange(len(right)) % 2 == 0
    mixed = logits.assign(**{"0": np.where(wrong_half, -logits["0"], logits["0"]),
                             "1": np.where(wrong_half, -logits["1"], logits["1"])})
    assert grade(write(tmp_path / "b", mixed), hidden) == 0.5


def test_missing_submission(mini_data, tmp_path):
    (tmp_path / "ws").mkdir()
    with pytest.raises(InvalidSubmission, match="submission.csv: file not found"):
        grade(tmp_path / "ws", mini_data[1])


# --------------------------------------------------------------------------- full recipe


def test_full_recipe_against_fake_hub(monkeypatch, tmp_path):
    """HF datasets and the Hub replaced at their boundary: layout, hidden labels, shuffled test."""
    import datasets
    import huggingface_hub

    reviews = {split: datasets.Dataset.from_dict({"text": [f"{split} review {i}" for i in range(40)],
                                                  "label": [0] * 20 + [1] * 20})  # sorted, as imdb's test is
               for split in ("train", "test", "unsupervised")}
    loaded, fetched = [], []
    monkeypatch.setattr(datasets, "load_dataset", lambda name, **kw: loaded.append((name, kw)) or
                        datasets.DatasetDict(reviews))

    def snapshot(repo_id, local_dir):
        fetched.append(repo_id)
        pathlib.Path(local_dir).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(local_dir) / "config.json").write_text('{"model_type": "distilbert"}')

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot)
    public, hidden, downloads = tmp_path / "public", tmp_path / "hidden", tmp_path / "downloads"
    for folder in (public, hidden, downloads):
        folder.mkdir()
    load_function(TASK, load_spec(TASK)["data"]["full"]["prepare"])(public, hidden, 0, downloads)

    assert loaded[0][0] == "imdb" and loaded[0][1]["cache_dir"].startswith(str(downloads))
    assert fetched == ["distilbert-base-uncased"]
    assert (public / "distilbert-base-uncased" / "config.json").is_file()
    splits = {name: pd.read_parquet(public / "imdb" / f"{name}.parquet") for name in SPLITS}
    answers = pd.read_csv(hidden / "answers.csv")
    assert {name: list(frame.columns) for name, frame in splits.items()} == {name: ["text", "label"] for name in SPLITS}
    assert splits["train"]["text"].tolist() == [f"train review {i}" for i in range(40)]
    assert splits["unsupervised"]["text"].tolist() == [f"unsupervised review {i}" for i in range(40)]
    assert set(splits["test"]["label"]) == {-1} and set(splits["unsupervised"]["label"]) == {-1}
    test = splits["test"]
    index = test["text"].str.extract(r"(\d+)$")[0].astype(int)
    assert (answers["idx"] == test.index).all()
    assert (answers["label"] == (index >= 20)).all(), "answers must match the review at that position"
    assert not (np.diff(answers["label"]) >= 0).all(), "test reviews must not stay sorted by label"


# --------------------------------------------------------------------------- the starter


def test_starter_is_a_skeleton_that_stops_before_the_submission(mini_data, tmp_path):
    """As the original: the data loads, then the missing model is called and nothing is written."""
    workspace = make_workspace(TASK, mini_data[0], tmp_path / "ws")
    assert sorted(path.name for path in workspace.iterdir()) == ["distilbert-base-uncased", "imdb", "train.py"]
    environment = {**os.environ, "HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    completed = subprocess.run([sys.executable, "train.py"], cwd=workspace, capture_output=True, text=True,
                               timeout=300, env=environment, stdin=subprocess.DEVNULL)
    assert completed.returncode != 0
    assert "model(review[\"text\"])" in completed.stderr
    assert "TypeError: 'NoneType' object is not callable" in completed.stderr
    assert not (workspace / "submission.csv").exists()

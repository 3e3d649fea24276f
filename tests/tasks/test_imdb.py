"""The imdb task's data recipes and grader (the starter and reference run in the main job)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.grading import InvalidSubmission
from tests.tasks.test_smoke_tasks import grade as grade_task, load_function, load_spec, prepare, tree_digest

TASK = "imdb"


@pytest.fixture(scope="module")
def mini_data(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("imdb-mini"))


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
    train = pd.read_parquet(public / "imdb" / "train.parquet")
    test = pd.read_parquet(public / "imdb" / "test.parquet")
    answers = pd.read_csv(hidden / "answers.csv")
    assert list(train.columns) == ["text", "label"] and train["label"].dtype == "int64"
    assert set(train["label"]) == {0, 1} and train["label"].mean() == 0.5
    assert list(test.columns) == ["idx", "text"] and test["idx"].is_unique
    assert list(answers.columns) == ["idx", "label"] and sorted(answers["idx"]) == sorted(test["idx"])
    assert not list(public.glob("**/answers*")), "answers must stay hidden"


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
    (lambda f: f.assign(**{"1": f["1"] - 2.0}), "must be non-negative"),
    (lambda f: f.rename(columns={"idx": "id"}), "missing column 'idx'"),
])
def test_corrupted_submissions_are_explained(mini_data, tmp_path, corrupt, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(write(tmp_path / "ws", corrupt(perfect(mini_data[1]))), mini_data[1])


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
    train = pd.read_parquet(public / "imdb" / "train.parquet")
    test = pd.read_parquet(public / "imdb" / "test.parquet")
    answers = pd.read_csv(hidden / "answers.csv")
    assert len(train) == 40 and list(test.columns) == ["idx", "text"]
    joined = test.merge(answers, on="idx")
    index = joined["text"].str.extract(r"(\d+)$")[0].astype(int)
    assert (joined["label"] == (index >= 20)).all(), "answers must match the review they belong to"
    assert not (np.diff(answers["label"]) >= 0).all(), "test reviews must not stay sorted by label"

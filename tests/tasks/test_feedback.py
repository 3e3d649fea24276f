"""feedback: mini data in the competition's format, the MCRMSE grader on bad submissions, the full recipe,
and the starter's random placeholder."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.errors import InvalidSubmission
from tests.data.fakes import fake_kaggle
from tests.tasks.kaggle_support import ASSETS, digests, grade, make_mini, module

TASK = "feedback"
SCORES = ["cohesion", "syntax", "vocabulary", "phraseology", "grammar", "conventions"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_mini(TASK, tmp_path_factory.mktemp("feedback"))


def test_mini_has_the_competition_layout_and_is_deterministic(data, tmp_path):
    public, hidden = data
    assert sorted(digests(public)) == ["sample_submission.csv", "test.csv", "train.csv"]
    train, test = pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv")
    assert list(train.columns) == ["text_id", "full_text"] + SCORES and list(test.columns) == ["text_id", "full_text"]
    assert train.text_id.str.fullmatch(r"[0-9A-F]{12}").all() and not set(train.text_id) & set(test.text_id)
    values = train[SCORES].to_numpy()
    assert values.min() >= 1.0 and values.max() <= 5.0 and np.all(values * 2 == np.round(values * 2))
    misspelled = train.full_text.str.contains("becuase|alot|studens|thinck")
    assert train.conventions[misspelled].mean() < train.conventions[~misspelled].mean()  # real signal
    again, _ = make_mini(TASK, tmp_path / "again")
    assert digests(again) == digests(public)


@pytest.fixture
def truth(data):
    return pd.read_csv(data[1] / "answers.csv", dtype={"text_id": str})


def test_grader_aligns_by_id_and_averages_the_six_rmses(data, truth, tmp_path):
    assert grade(TASK, truth.sample(frac=1, random_state=0), data[1], tmp_path / "ws") == 0.0
    shifted = truth.copy()
    shifted["grammar"] += 0.6  # one column off by 0.6: RMSE 0.6 there, 0 elsewhere
    assert grade(TASK, shifted.iloc[::-1], data[1], tmp_path / "ws") == pytest.approx(0.1)


@pytest.mark.parametrize("corrupt, message", [
    (lambda t: t.drop(columns="vocabulary"), "missing column 'vocabulary'"),
    (lambda t: t.iloc[:-2], r"has \d+ rows; expected \d+"),
    (lambda t: t.assign(syntax=np.where(t.index == 5, np.nan, t.syntax)), "column 'syntax' has 1 missing, NaN"),
    (lambda t: t.assign(cohesion="good"), "column 'cohesion' must be numeric"),
    (lambda t: pd.concat([t.iloc[:-1], t.iloc[:1]]), "duplicate id"),
])
def test_grader_explains_invalid_submissions(data, truth, tmp_path, corrupt, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(TASK, corrupt(truth), data[1], tmp_path / "ws")


def test_full_recipe_holds_out_the_last_two_percent_after_the_originals_shuffle(monkeypatch, tmp_path, data):
    public, hidden = data
    source = tmp_path / "kaggle-source"
    source.mkdir()
    labelled = pd.concat([pd.read_csv(public / "train.csv"),
                          pd.read_csv(public / "test.csv").merge(pd.read_csv(hidden / "answers.csv"))])
    labelled = labelled.sort_values("text_id").reset_index(drop=True)
    labelled.to_csv(source / "train.csv", index=False)
    fake_kaggle(monkeypatch, {"feedback-prize-english-language-learning": source})
    (tmp_path / "public").mkdir()
    (tmp_path / "hidden").mkdir()
    module(TASK, "prepare").full(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    train = pd.read_csv(tmp_path / "public/train.csv")
    test = pd.read_csv(tmp_path / "public/test.csv")
    answers = pd.read_csv(tmp_path / "hidden/answers.csv")
    # the original: sample(frac=1, random_state=42), first int(0.98 n) rows kept in that order, the rest held out
    shuffled = labelled.sample(frac=1, random_state=42).reset_index(drop=True)
    assert len(test) == 32 and list(answers.columns) == ["text_id"] + SCORES
    assert list(train.text_id) == list(shuffled.text_id[:1568])
    assert list(test.text_id) == list(answers.text_id) == list(shuffled.text_id[1568:])
    pd.testing.assert_frame_equal(answers, shuffled.iloc[1568:][["text_id"] + SCORES].reset_index(drop=True))


def test_mini_uses_the_same_split_rule(data):
    public, hidden = data
    train, test = pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv")
    essays = module(TASK, "prepare").generate(np.random.default_rng(0), 1600)
    shuffled = essays.sample(frac=1, random_state=42)
    assert (len(train), len(test)) == (1568, 32)
    assert list(train.text_id) + list(test.text_id) == list(shuffled.text_id)


def test_starter_predicts_uniform_random_scores_as_the_original(data, tmp_path):
    """train_model returns no model and predict draws from [0, 1) after seeding with 42: a valid
    submission, with the same numbers on every run."""
    public, hidden = data
    submissions = []
    for name in ("a", "b"):
        workspace = tmp_path / name
        shutil.copytree(ASSETS / TASK / "env", workspace)
        shutil.copytree(public, workspace, dirs_exist_ok=True)
        completed = subprocess.run([sys.executable, "train.py"], cwd=workspace, capture_output=True, text=True,
                                   timeout=300, stdin=subprocess.DEVNULL)
        assert completed.returncode == 0, completed.stderr
        assert "rmse_cohesion" in completed.stdout and "Validation MCRMSE:" in completed.stdout
        submissions.append((workspace / "submission.csv").read_text())
    assert submissions[0] == submissions[1]
    submission = pd.read_csv(tmp_path / "a" / "submission.csv", dtype={"text_id": str})
    assert list(submission.columns) == ["text_id"] + SCORES
    assert list(submission.text_id) == list(pd.read_csv(public / "test.csv", dtype={"text_id": str}).text_id)
    assert ((submission[SCORES] >= 0) & (submission[SCORES] < 1)).all().all()
    assert module(TASK, "grader").score(tmp_path / "a", hidden) > 2.0

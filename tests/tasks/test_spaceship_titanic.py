"""spaceship-titanic: mini data in the competition's format, the grader on bad submissions, the full recipe,
and the skeleton starter."""

from __future__ import annotations

import pandas as pd
import pytest

from pytest_mlab.errors import InvalidSubmission
from tests.data.fakes import fake_kaggle
from tests.tasks.kaggle_support import ASSETS, assert_stops_at_the_missing, digests, filled_in_score, grade, \
    make_mini, module

TASK = "spaceship-titanic"
COLUMNS = ["PassengerId", "HomePlanet", "CryoSleep", "Cabin", "Destination", "Age", "VIP", "RoomService",
           "FoodCourt", "ShoppingMall", "Spa", "VRDeck", "Name", "Transported"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_mini(TASK, tmp_path_factory.mktemp("spaceship"))


def test_mini_has_the_competition_layout_and_is_deterministic(data, tmp_path):
    public, hidden = data
    assert sorted(digests(public)) == ["sample_submission.csv", "test.csv", "train.csv"]
    train, test = pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv")
    assert list(train.columns) == COLUMNS and list(test.columns) == COLUMNS[:-1]
    assert train.PassengerId.str.fullmatch(r"\d{4}_\d{2}").all()
    assert train.Cabin.dropna().str.fullmatch(r"[A-GT]/\d+/[PS]").all()
    missing = train[COLUMNS[1:-1]].isna().mean()
    assert missing.between(0.01, 0.04).all(), missing
    assert train.Transported.dtype == bool and 0.4 < train.Transported.mean() < 0.6
    sleeping = train[train.CryoSleep == True]  # noqa: E712 (an object column)
    assert (sleeping[["RoomService", "Spa"]].fillna(0) == 0).all().all()  # sleepers cannot spend
    assert sleeping.Transported.mean() > train.Transported.mean() + 0.15  # real signal
    assert len(train) == 3200 and len(test) == 800  # the last 20% of the rows held out, as in the original
    assert train.PassengerId.is_monotonic_increasing and test.PassengerId.is_monotonic_increasing
    assert train.PassengerId.iloc[-1] < test.PassengerId.iloc[0]
    assert list(pd.read_csv(hidden / "answers.csv", dtype={"PassengerId": str}).PassengerId) == list(test.PassengerId)
    again, _ = make_mini(TASK, tmp_path / "again")
    assert digests(again) == digests(public)


@pytest.fixture
def truth(data):
    return pd.read_csv(data[1] / "answers.csv", dtype={"PassengerId": str})


def test_grader_aligns_by_id_and_scores_accuracy(data, truth, tmp_path):
    assert grade(TASK, truth.sample(frac=1, random_state=0), data[1], tmp_path / "ws") == 1.0
    flipped = truth.assign(Transported=~truth.Transported)
    assert grade(TASK, flipped, data[1], tmp_path / "ws") == 0.0
    half = truth.assign(Transported=[not v if i % 2 else v for i, v in enumerate(truth.Transported)])
    assert grade(TASK, half.iloc[::-1], data[1], tmp_path / "ws") == pytest.approx((len(truth) + 1) // 2 / len(truth))
    text = truth.assign(Transported=truth.Transported.map({True: "true", False: "FALSE"}))
    assert grade(TASK, text, data[1], tmp_path / "ws") == 1.0


@pytest.mark.parametrize("corrupt, message", [
    (lambda t: t.drop(columns="Transported"), "missing column 'Transported'"),
    (lambda t: t.iloc[:-1], r"has \d+ rows; expected \d+"),
    (lambda t: t.assign(Transported=t.Transported.astype(object).where(t.index != 2, None)), "must be True or False"),
    (lambda t: t.assign(Transported=t.Transported.astype(float) * 0.7), "must be True or False; found '0.7'"),
    (lambda t: pd.concat([t.iloc[:-1], t.iloc[:1]]), "duplicate id"),
    (lambda t: t.assign(PassengerId=t.PassengerId.where(t.index != 0, "9999_99")), "not in test.csv: 9999_99"),
])
def test_grader_explains_invalid_submissions(data, truth, tmp_path, corrupt, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(TASK, corrupt(truth), data[1], tmp_path / "ws")


def test_full_recipe_holds_out_the_last_fifth_of_the_rows_in_file_order(monkeypatch, tmp_path, data):
    public, hidden = data
    source = tmp_path / "kaggle-source"
    source.mkdir()
    labelled = pd.concat([pd.read_csv(public / "train.csv", dtype={"PassengerId": str}),
                          pd.read_csv(public / "test.csv", dtype={"PassengerId": str}).merge(
                              pd.read_csv(hidden / "answers.csv", dtype={"PassengerId": str}))])
    labelled = labelled.sample(frac=1, random_state=7)  # not in id order: position, not id, must decide
    labelled.to_csv(source / "train.csv", index=False)
    log = fake_kaggle(monkeypatch, {"spaceship-titanic": source})
    (tmp_path / "public").mkdir()
    (tmp_path / "hidden").mkdir()
    module(TASK, "prepare").full(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    train = pd.read_csv(tmp_path / "public/train.csv", dtype={"PassengerId": str})
    answers = pd.read_csv(tmp_path / "hidden/answers.csv", dtype={"PassengerId": str})
    assert log == ["spaceship-titanic"] and list(train.columns) == COLUMNS
    kept = int(len(labelled) * 0.8)
    assert list(train.PassengerId) == list(labelled.PassengerId[:kept])
    assert list(answers.PassengerId) == list(labelled.PassengerId[kept:])
    assert list(answers.Transported) == list(labelled.Transported[kept:])


# --------------------------------------------------------------------------- the skeleton starter


def test_the_agent_sees_the_originals_files():
    shipped = sorted(path.name for path in (ASSETS / TASK / "env").iterdir() if path.name != "__pycache__")
    assert shipped == ["task_descriptor.txt", "train.py"]


def test_starter_is_a_skeleton_that_stops_before_the_submission(data, tmp_path):
    """As the original: no model, so the first print of train_accuracy fails and nothing is written."""
    assert_stops_at_the_missing(TASK, data[0], tmp_path / "ws", "train_accuracy")


def test_starter_filled_in_writes_a_valid_submission(data, tmp_path):
    """The original's rows (shuffled, 80% to train, one row skipped) and encoding, with a model added;
    the mini data, like the original's, lacks deck T among the test passengers only."""
    block = ("model = LogisticRegression(max_iter=1000).fit(train_X, train_y)\n"
             "train_accuracy = model.score(train_X, train_y)\n"
             "val_accuracy = model.score(val_X, val_y)\n"
             "assert (len(train_X), len(val_X)) == (2560, 639) and train_X.shape[1] == 20\n"
             "assert list(val_X.columns) == list(train_X.columns)\n")
    assert filled_in_score(TASK, data, tmp_path / "ws", block, ("Train Accuracy: ", "Validation Accuracy: ")) > 0.7

"""house-price: mini data in the competition's format, the grader on bad submissions, the full recipe,
and the skeleton starter."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.errors import DataError, InvalidSubmission
from tests.data.fakes import fake_kaggle
from tests.tasks.kaggle_support import ASSETS, assert_stops_at_the_missing, digests, filled_in_score, grade, \
    make_mini, module

TASK = "house-price"
COLUMNS = ["Id", "MSSubClass", "MSZoning", "LotFrontage", "LotArea", "Street", "Alley", "LotShape", "LandContour",
           "Utilities", "LotConfig", "LandSlope", "Neighborhood", "Condition1", "Condition2", "BldgType",
           "HouseStyle", "OverallQual", "OverallCond", "YearBuilt", "YearRemodAdd", "RoofStyle", "RoofMatl",
           "Exterior1st", "Exterior2nd", "MasVnrType", "MasVnrArea", "ExterQual", "ExterCond", "Foundation",
           "BsmtQual", "BsmtCond", "BsmtExposure", "BsmtFinType1", "BsmtFinSF1", "BsmtFinType2", "BsmtFinSF2",
           "BsmtUnfSF", "TotalBsmtSF", "Heating", "HeatingQC", "CentralAir", "Electrical", "1stFlrSF", "2ndFlrSF",
           "LowQualFinSF", "GrLivArea", "BsmtFullBath", "BsmtHalfBath", "FullBath", "HalfBath", "BedroomAbvGr",
           "KitchenAbvGr", "KitchenQual", "TotRmsAbvGrd", "Functional", "Fireplaces", "FireplaceQu", "GarageType",
           "GarageYrBlt", "GarageFinish", "GarageCars", "GarageArea", "GarageQual", "GarageCond", "PavedDrive",
           "WoodDeckSF", "OpenPorchSF", "EnclosedPorch", "3SsnPorch", "ScreenPorch", "PoolArea", "PoolQC", "Fence",
           "MiscFeature", "MiscVal", "MoSold", "YrSold", "SaleType", "SaleCondition", "SalePrice"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_mini(TASK, tmp_path_factory.mktemp("house"))


def test_mini_has_the_competition_layout_and_is_deterministic(data, tmp_path):
    public, hidden = data
    assert sorted(digests(public)) == ["data_description.txt", "sample_submission.csv", "test.csv", "train.csv"]
    assert (public / "data_description.txt").read_text() == (ASSETS / TASK / "mini_data_description.txt").read_text()
    train, test = pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv")
    assert list(train.columns) == COLUMNS and list(test.columns) == COLUMNS[:-1]
    assert len(train) + len(test) == 1460 and set(train.Id).isdisjoint(test.Id)
    assert "NA" in (public / "train.csv").read_text()  # missing values spelled as in the real files
    assert train.PoolQC.isna().mean() > 0.98 and 0.1 < train.LotFrontage.isna().mean() < 0.25
    assert (train.GarageType.isna() == (train.GarageCars == 0)).all()  # "no garage" is consistent
    assert train.SalePrice.between(30_000, 800_000).all()
    assert np.corrcoef(train.OverallQual, np.log(train.SalePrice))[0, 1] > 0.6  # real signal
    again, _ = make_mini(TASK, tmp_path / "again")
    assert digests(again) == digests(public)
    other, _ = make_mini(TASK, tmp_path / "other", seed=1)
    assert digests(other) != digests(public)


def test_mini_holds_out_the_last_fifth_of_the_rows_as_the_original_does(data):
    public, hidden = data
    train, answers = pd.read_csv(public / "train.csv"), pd.read_csv(hidden / "answers.csv")
    assert list(train.Id) == list(range(1, 1169))  # the first int(0.8 * 1460) houses, in order
    assert list(answers.Id) == list(range(1169, 1461))
    assert list(pd.read_csv(public / "test.csv").Id) == list(answers.Id)


@pytest.fixture
def truth(data):
    return pd.read_csv(data[1] / "answers.csv")


def test_grader_aligns_by_id_and_scores_mae(data, truth, tmp_path):
    perfect = truth.sample(frac=1, random_state=0)
    assert grade(TASK, perfect, data[1], tmp_path / "ws") == 0.0
    off = truth.assign(SalePrice=truth.SalePrice + 1000).iloc[::-1]
    assert grade(TASK, off, data[1], tmp_path / "ws") == pytest.approx(1000.0)


@pytest.mark.parametrize("corrupt, message", [
    (lambda t: t.drop(columns="SalePrice"), "missing column 'SalePrice'"),
    (lambda t: t.iloc[:-1], "has 291 rows; expected 292"),
    (lambda t: t.assign(SalePrice=np.where(t.index == 3, np.nan, t.SalePrice)), "NaN"),
    (lambda t: pd.concat([t.iloc[:-1], t.iloc[:1]]), "duplicate id"),
    (lambda t: t.rename(columns={"Id": "id"}), "missing column 'Id'"),
])
def test_grader_explains_invalid_submissions(data, truth, tmp_path, corrupt, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(TASK, corrupt(truth), data[1], tmp_path / "ws")


@pytest.fixture
def competition(data, tmp_path):
    """The competition's files as Kaggle serves them: all labelled houses in train.csv, here in a
    shuffled row order, so that a split by position and one by Id tell apart."""
    public, hidden = data
    source = tmp_path / "kaggle-source"
    source.mkdir()
    test = pd.read_csv(public / "test.csv", keep_default_na=False, na_values=["NA"]).merge(pd.read_csv(hidden / "answers.csv"))
    train = pd.read_csv(public / "train.csv", keep_default_na=False, na_values=["NA"])
    pd.concat([train, test]).sample(frac=1, random_state=7).to_csv(source / "train.csv", index=False, na_rep="NA")
    test.drop(columns="SalePrice").to_csv(source / "test.csv", index=False, na_rep="NA")
    (source / "data_description.txt").write_text("MSSubClass: ...\n")
    return source


def test_full_recipe_holds_out_the_last_fifth_of_the_rows_in_file_order(monkeypatch, tmp_path, competition):
    log = fake_kaggle(monkeypatch, {"home-data-for-ml-course": competition})
    recipe = module(TASK, "prepare")
    for name in ("a", "b"):
        (tmp_path / name / "public").mkdir(parents=True)
        (tmp_path / name / "hidden").mkdir()
        recipe.full(tmp_path / name / "public", tmp_path / name / "hidden", 0, tmp_path / "downloads")
    assert log == ["home-data-for-ml-course"]  # the second preparation reused the download
    assert digests(tmp_path / "a") == digests(tmp_path / "b")
    train = pd.read_csv(tmp_path / "a/public/train.csv")
    answers = pd.read_csv(tmp_path / "a/hidden/answers.csv")
    assert list(train.columns) == COLUMNS and len(answers) == 292 and set(train.Id).isdisjoint(answers.Id)
    rows = pd.read_csv(competition / "train.csv", keep_default_na=False, na_values=["NA"])
    assert list(train.Id) == list(rows.Id[:1168]) and list(answers.Id) == list(rows.Id[1168:])
    assert list(answers.SalePrice) == list(rows.SalePrice[1168:])
    assert (tmp_path / "a/public/data_description.txt").read_text() == "MSSubClass: ...\n"  # the competition's own


def test_full_recipe_without_the_competitions_description_says_so(monkeypatch, tmp_path, competition):
    (competition / "data_description.txt").unlink()
    fake_kaggle(monkeypatch, {"home-data-for-ml-course": competition})
    (tmp_path / "public").mkdir()
    (tmp_path / "hidden").mkdir()
    with pytest.raises(DataError, match="has no data_description.txt"):
        module(TASK, "prepare").full(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")


def test_full_recipe_without_accepted_rules_says_where_to_accept_them(monkeypatch, tmp_path, competition):
    fake_kaggle(monkeypatch, {"home-data-for-ml-course": competition}, status=403)
    (tmp_path / "public").mkdir()
    (tmp_path / "hidden").mkdir()
    with pytest.raises(DataError, match="kaggle.com/competitions/home-data-for-ml-course/rules"):
        module(TASK, "prepare").full(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")


# --------------------------------------------------------------------------- the skeleton starter


def test_the_agent_sees_the_originals_files():
    """train.py from env/; data_description.txt comes with the data (the competition's own on full)."""
    shipped = sorted(path.name for path in (ASSETS / TASK / "env").iterdir() if path.name != "__pycache__")
    assert shipped == ["train.py"]


def test_starter_is_a_skeleton_that_stops_before_the_submission(data, tmp_path):
    """As the original: no model, so the first print of train_mae fails and nothing is written."""
    assert_stops_at_the_missing(TASK, data[0], tmp_path / "ws", "train_mae")


def test_starter_filled_in_writes_a_valid_submission(data, tmp_path):
    """The original's split (25% validation, random_state=1) and 25 features, with a model added."""
    block = ("model = RandomForestRegressor(n_estimators=20, random_state=1).fit(train_X, train_y)\n"
             "train_mae = mean_absolute_error(train_y, model.predict(train_X))\n"
             "valid_mae = mean_absolute_error(valid_y, model.predict(valid_X))\n"
             "assert len(valid_X) == 292 and len(train_X) == 876 and X.shape[1] == 25\n")
    assert 0 < filled_in_score(TASK, data, tmp_path / "ws", block, ("Train MAE: ", "Validation MAE: ")) < 40_000


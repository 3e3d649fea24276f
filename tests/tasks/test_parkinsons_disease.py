"""parkinsons-disease: the competition's files and test API, the SMAPE+1 grader, the starter's
training table and model as in the original, the full recipe."""

from __future__ import annotations

import ast
import random
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.errors import InvalidSubmission
from tests.data.fakes import fake_kaggle
from tests.tasks.kaggle_support import ASSETS, digests, grade, make_mini, module

TASK = "parkinsons-disease"
CLINICAL = ["visit_id", "patient_id", "visit_month", "updrs_1", "updrs_2", "updrs_3", "updrs_4",
            "upd23b_clinical_state_on_medication"]
FILES = ["example_test_files/sample_submission.csv", "example_test_files/test.csv",
         "example_test_files/test_peptides.csv", "example_test_files/test_proteins.csv",
         "public_timeseries_testing_util.py", "supplemental_clinical_data.csv", "train_clinical_data.csv",
         "train_peptides.csv", "train_proteins.csv"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_mini(TASK, tmp_path_factory.mktemp("parkinsons"))


def test_mini_has_the_competition_layout_and_is_deterministic(data, tmp_path):
    public, hidden = data
    assert sorted(digests(public)) == FILES
    clinical = pd.read_csv(public / "train_clinical_data.csv")
    assert list(clinical.columns) == CLINICAL
    assert list(pd.read_csv(public / "supplemental_clinical_data.csv").columns) == CLINICAL
    assert list(pd.read_csv(public / "train_proteins.csv").columns) == ["visit_id", "visit_month", "patient_id",
                                                                         "UniProt", "NPX"]
    test = pd.read_csv(public / "example_test_files/test.csv")
    assert list(test.columns) == ["visit_id", "visit_month", "patient_id", "updrs_test", "row_id", "group_key"]
    assert not set(test.patient_id) & set(clinical.patient_id)
    assert clinical.updrs_4.isna().mean() > 0.3 and set(clinical.upd23b_clinical_state_on_medication.dropna()) == {"On", "Off"}
    sample = pd.read_csv(public / "example_test_files/sample_submission.csv")
    assert sample.prediction_id.str.fullmatch(r"\d+_\d+_updrs_[1-4]_plus_(0|6|12|24)_months").all()
    assert len(sample) == 16 * test.visit_id.nunique()
    answers = pd.read_csv(hidden / "answers.csv")
    assert set(answers.prediction_id) <= set(sample.prediction_id) and answers.rating.notna().all()
    again, _ = make_mini(TASK, tmp_path / "again")
    assert digests(again) == digests(public)


def test_the_api_serves_months_in_order_and_writes_the_submission(data, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name in FILES:
        (workspace / name).parent.mkdir(exist_ok=True)
        (workspace / name).write_bytes((data[0] / name).read_bytes())
    script = """
from public_timeseries_testing_util import MockApi
env = MockApi()
months = []
for test, peptides, proteins, sample in env.iter_test():
    months.append(int(test.visit_month.iloc[0]))
    assert "group_key" not in sample.columns and set(proteins.visit_month) <= {months[-1]}
    sample["rating"] = 1.0
    env.predict(sample)
print(months == sorted(months), len(months))
"""
    completed = subprocess.run([sys.executable, "-c", script], cwd=workspace, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.split()[0] == "True" and int(completed.stdout.split()[1]) > 3
    assert grade(TASK, pd.read_csv(workspace / "submission.csv"), data[1], tmp_path / "graded") > 0
    skipping = script.replace("    env.predict(sample)\n", "")
    completed = subprocess.run([sys.executable, "-c", skipping], cwd=workspace, capture_output=True, text=True, timeout=120)
    assert "call env.predict(...) for visit month" in completed.stderr


@pytest.fixture
def submission(data):
    sample = pd.read_csv(data[0] / "example_test_files/sample_submission.csv")[["prediction_id"]]
    answers = pd.read_csv(data[1] / "answers.csv")
    return sample.merge(answers, how="left").fillna({"rating": 5.0}), answers


def test_grader_scores_only_ids_with_a_true_rating_and_aligns_by_id(data, submission, tmp_path):
    frame, answers = submission
    assert grade(TASK, frame.sample(frac=1, random_state=0), data[1], tmp_path / "ws") == 0.0
    off = frame.assign(rating=np.where(frame.prediction_id.isin(answers.prediction_id), frame.rating + 1, 0.0))
    truth = answers.rating.to_numpy() + 1
    expected = 100 * np.mean(2 * 1 / (truth + truth + 1))
    assert grade(TASK, off, data[1], tmp_path / "ws") == pytest.approx(expected)


def test_smape_plus_one_treats_zero_for_zero_as_exact():
    smape = module(TASK, "grader").smape_plus_one
    assert smape(np.array([0.0, 0.0]), np.array([0.0, 1.0])) == pytest.approx(100 * (0 + 2 * 1 / 3) / 2)


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: f.drop(columns="rating"), "missing column 'rating'"),
    (lambda f: f.iloc[:-1], r"has \d+ rows; expected \d+"),
    (lambda f: f.assign(rating=np.where(f.index == 0, np.nan, f.rating)), "missing, NaN"),
    (lambda f: f.assign(rating=-1.0), "must not be negative"),
    (lambda f: pd.concat([f.iloc[:-1], f.iloc[:1]]), "duplicate id"),
])
def test_grader_explains_invalid_submissions(data, submission, tmp_path, corrupt, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(TASK, corrupt(submission[0]), data[1], tmp_path / "ws")


def original_draw(clinical: pd.DataFrame) -> set:
    """The original prepare script's test patients: random.seed(42), then random.sample of 2."""
    random.seed(42)
    return set(random.sample(clinical["patient_id"].unique().tolist(), 2))


def test_mini_holds_out_the_two_patients_the_original_would_draw(data, tmp_path):
    public, _hidden = data
    test = pd.read_csv(public / "example_test_files/test.csv")
    everyone = pd.concat([pd.read_csv(public / "train_clinical_data.csv"),
                          test.drop_duplicates("visit_id")]).sort_values("patient_id", kind="stable")
    assert set(test.patient_id) == original_draw(everyone)
    other, _ = make_mini(TASK, tmp_path / "seed1", seed=1)
    assert set(pd.read_csv(other / "example_test_files/test.csv").patient_id) != set(test.patient_id)


def test_other_files_keep_only_the_training_patients(data):
    public, _hidden = data
    training = set(pd.read_csv(public / "train_clinical_data.csv").patient_id)
    for name in ("supplemental_clinical_data.csv", "train_peptides.csv", "train_proteins.csv"):
        assert set(pd.read_csv(public / name).patient_id) <= training, name
    assert list(pd.read_csv(public / "supplemental_clinical_data.csv").columns) == CLINICAL


def test_full_recipe_holds_out_the_original_two_patients(monkeypatch, tmp_path, data):
    public, _hidden = data
    source = tmp_path / "kaggle-source"
    source.mkdir()
    for name in ("train_clinical_data.csv", "train_peptides.csv", "train_proteins.csv"):
        (source / name).write_bytes((public / name).read_bytes())
    clinical = pd.read_csv(source / "train_clinical_data.csv")
    supplemental = clinical.head(12).assign(patient_id=99999)  # a patient without protein samples
    kept = clinical[clinical.patient_id == clinical.patient_id.iloc[-1]].assign(upd23b_clinical_state_on_medication="On")
    pd.concat([supplemental, kept]).to_csv(source / "supplemental_clinical_data.csv", index=False)
    (source / "public_timeseries_testing_util.py").write_text("# Kaggle's own API module\n")
    fake_kaggle(monkeypatch, {"amp-parkinsons-disease-progression-prediction": source})
    (tmp_path / "public").mkdir()
    (tmp_path / "hidden").mkdir()
    module(TASK, "prepare").full(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    assert sorted(digests(tmp_path / "public")) == FILES
    assert (tmp_path / "public/public_timeseries_testing_util.py").read_text() == \
        (ASSETS / TASK / "public_timeseries_testing_util.py").read_text()
    train = pd.read_csv(tmp_path / "public/train_clinical_data.csv")
    test = pd.read_csv(tmp_path / "public/example_test_files/test.csv")
    held = original_draw(clinical)
    assert set(test.patient_id) == held and not held & set(train.patient_id)
    assert set(train.patient_id) == set(clinical.patient_id) - held
    written = pd.read_csv(tmp_path / "public/supplemental_clinical_data.csv")
    expected = set() if clinical.patient_id.iloc[-1] in held else {clinical.patient_id.iloc[-1]}
    assert set(written.patient_id) == expected


# --------------------------------------------------------------------------- the starter


@pytest.fixture
def starter(monkeypatch):
    monkeypatch.syspath_prepend(str(ASSETS / TASK))  # the starter imports MockApi from its folder
    return module(TASK, "env/train")


def original_table(visits: pd.DataFrame, part: str) -> list[list]:
    """The original starter's rule, row by row: each patient in order of appearance, each of their
    visits; keep [month, patient, 4 scores] when the score was rated at +0, +6, +12 and +24 months."""
    rows = []
    for patient in visits.patient_id.unique():
        own = visits[visits.patient_id == patient]
        months = own.visit_month.tolist()
        for month in months:
            values = [own[own.visit_month == month + plus][part].values[0] for plus in (0, 6, 12, 24)
                      if month + plus in months]
            if len(values) == 4 and not np.isnan(values).any():
                rows.append([month, patient, *values])
    return rows


def test_starter_training_table_follows_the_original_rule(starter, data):
    public, _hidden = data
    clinical = pd.read_csv(public / "train_clinical_data.csv")
    visits = pd.concat([clinical.head(300), clinical.head(20)])  # a patient's rows twice, apart
    for part, least in (("updrs_1", 10), ("updrs_4", 3)):
        table = starter.training_table(visits, part)
        assert table.values.tolist() == original_table(visits, part)
        assert len(table) > least


def test_starter_keeps_the_original_model_and_cross_validation(starter):
    """scikit-learn's default random forest (seeded), four horizons at once, GroupKFold with 8 folds."""
    model = starter.make_model()
    defaults = type(model)().get_params()
    assert {k: v for k, v in model.get_params().items() if v != defaults[k]} == {"random_state": 0}
    assert starter.FOLDS == 8 and starter.HORIZONS == [0, 6, 12, 24]
    tree = ast.parse((ASSETS / TASK / "env" / "train.py").read_text())
    calls = {ast.unparse(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert {"GroupKFold", "cross_val_score", "make_scorer"} <= calls


def test_starter_forecasts_every_horizon_of_every_visit(starter):
    class Model:
        def predict(self, months):
            return np.hstack([months + plus + 0.4 for plus in (0, 6, 12, 24)])

    test = pd.DataFrame({"visit_id": ["7_12"] * 4, "visit_month": [12] * 4, "patient_id": [7] * 4,
                         "updrs_test": ["updrs_1", "updrs_2", "updrs_3", "updrs_4"]})
    ratings = starter.forecast({"updrs_2": Model()}, test)
    assert ratings == {"7_12_updrs_2_plus_0_months": 12.0, "7_12_updrs_2_plus_6_months": 18.0,
                       "7_12_updrs_2_plus_12_months": 24.0, "7_12_updrs_2_plus_24_months": 36.0}

"""Starter for the parkinsons-disease task: forecast UPDRS scores from the visit month alone.

For each UPDRS part, one random forest maps a visit's month to the part's score at the visit
and 6, 12 and 24 months later (four outputs at once). It learns from the visits whose score is
known at all four of those months, ignoring the protein and peptide measurements. It prints
the cross-validated SMAPE+1 (8 folds, patients grouped, so no patient is in both halves), then
answers the test visits through MockApi, which writes submission.csv.
"""

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import make_scorer
from sklearn.model_selection import GroupKFold, cross_val_score

from public_timeseries_testing_util import MockApi

SEED = 0
UPDRS = ["updrs_1", "updrs_2", "updrs_3", "updrs_4"]
HORIZONS = [0, 6, 12, 24]
FOLDS = 8


def smape_plus_one(truth, predicted) -> float:
    """SMAPE (in percent) of truth + 1 and prediction + 1; lower is better."""
    truth, predicted = np.ravel(truth) + 1.0, np.ravel(predicted) + 1.0
    return float(100 * np.mean(2 * np.abs(predicted - truth) / (np.abs(truth) + np.abs(predicted))))


def training_table(visits: pd.DataFrame, part: str) -> pd.DataFrame:
    """One row per visit whose ``part`` score is known at the visit and 6, 12 and 24 months later:
    the visit's month and patient, then those four scores (patients in order of appearance)."""
    scores = visits.drop_duplicates(["patient_id", "visit_month"]).set_index(["patient_id", "visit_month"])[part]
    table = visits[["visit_month", "patient_id"]].rename(columns={"visit_month": "month"})
    table = table.iloc[np.argsort(pd.factorize(table["patient_id"])[0], kind="stable")].reset_index(drop=True)
    for plus in HORIZONS:
        later = pd.MultiIndex.from_arrays([table["patient_id"], table["month"] + plus])
        table[f"{part}+{plus}"] = scores.reindex(later).to_numpy()
    return table.dropna()


def make_model() -> RandomForestRegressor:
    return RandomForestRegressor(random_state=SEED)


def forecast(models: dict, test: pd.DataFrame) -> dict:
    """prediction_id -> rounded rating, for every visit of ``test`` at every part and horizon."""
    visits = test.drop_duplicates("visit_id")
    ratings = {}
    for part, model in models.items():
        predicted = model.predict(visits[["visit_month"]].to_numpy()).round()
        for plus, column in zip(HORIZONS, predicted.T):
            ids = visits["visit_id"].astype(str) + f"_{part}_plus_{plus}_months"
            ratings.update(zip(ids, column))
    return ratings


def main() -> None:
    visits = pd.concat([pd.read_csv("train_clinical_data.csv"), pd.read_csv("supplemental_clinical_data.csv")])
    scorer = make_scorer(smape_plus_one, greater_is_better=False)
    models, scores = {}, []
    for part in UPDRS:
        table = training_table(visits, part)
        X, y = table[["month"]].to_numpy(), table.iloc[:, 2:].to_numpy()
        models[part] = make_model().fit(X, y)
        folds = -cross_val_score(make_model(), X, y, groups=table["patient_id"], scoring=scorer,
                                 cv=GroupKFold(n_splits=FOLDS), error_score="raise")
        print(f"{part}: cross-validated SMAPE+1 per fold {folds.round(1).tolist()}, mean {folds.mean():.1f}")
        scores.append(folds)
    print(f"Overall cross-validated SMAPE+1: {np.mean(scores):.2f}")

    env = MockApi()
    for test, _peptides, _proteins, sample_submission in env.iter_test():
        sample_submission["rating"] = sample_submission["prediction_id"].map(forecast(models, test))
        env.predict(sample_submission)
    print("Wrote submission.csv")


if __name__ == "__main__":
    main()

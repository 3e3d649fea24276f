"""Starter for the parkinsons-disease task: forecast UPDRS scores from the visit month alone.

For each UPDRS part and each horizon (0, 6, 12, 24 months ahead), a random forest learns the
score from the month it is forecast for, ignoring the protein and peptide measurements. It
prints the cross-validated SMAPE+1 (patients grouped, so no patient is in both halves), then
answers the test visits through MockApi, which writes submission.csv.
"""

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestRegressor
from sklearn.model_selection import GroupKFold

from public_timeseries_testing_util import MockApi

UPDRS = ["updrs_1", "updrs_2", "updrs_3", "updrs_4"]
HORIZONS = [0, 6, 12, 24]


def smape_plus_one(truth, predicted) -> float:
    truth, predicted = np.asarray(truth) + 1.0, np.asarray(predicted) + 1.0
    return float(100 * np.mean(2 * np.abs(predicted - truth) / (np.abs(truth) + np.abs(predicted))))


def training_pairs(clinical: pd.DataFrame, part: str) -> pd.DataFrame:
    """(patient, month the forecast is for, true score) for every visit and horizon with a score."""
    rows = []
    scores = clinical.dropna(subset=[part]).set_index(["patient_id", "visit_month"])[part]
    for (patient, month), _value in scores.items():
        for plus in HORIZONS:
            if (patient, month + plus) in scores.index:
                rows.append((patient, month + plus, scores[(patient, month + plus)]))
    return pd.DataFrame(rows, columns=["patient_id", "month", "target"])


def make_model():
    return RandomForestRegressor(n_estimators=20, max_depth=4, random_state=0)


def main() -> None:
    clinical = pd.concat([pd.read_csv("train_clinical_data.csv"), pd.read_csv("supplemental_clinical_data.csv")])
    models = {}
    for part in UPDRS:
        pairs = training_pairs(clinical, part)
        folds = GroupKFold(n_splits=3).split(pairs, groups=pairs["patient_id"])
        scores = [smape_plus_one(pairs["target"].iloc[valid],
                                 make_model().fit(pairs[["month"]].iloc[train], pairs["target"].iloc[train])
                                 .predict(pairs[["month"]].iloc[valid]).round())
                  for train, valid in folds]
        print(f"{part}: cross-validated SMAPE+1 {np.mean(scores):.2f}")
        models[part] = make_model().fit(pairs[["month"]], pairs["target"])

    env = MockApi()
    for test, _peptides, _proteins, sample_submission in env.iter_test():
        visits = test.drop_duplicates("visit_id")
        forecasts = visits.loc[visits.index.repeat(len(HORIZONS)), ["patient_id", "visit_month"]]
        forecasts["plus"] = HORIZONS * len(visits)
        ratings = {}
        for part in UPDRS:
            predicted = models[part].predict(pd.DataFrame({"month": forecasts["visit_month"] + forecasts["plus"]})).round()
            ids = (forecasts["patient_id"].astype(str) + "_" + forecasts["visit_month"].astype(str) + f"_{part}_plus_"
                   + forecasts["plus"].astype(str) + "_months")
            ratings.update(zip(ids, predicted))
        sample_submission["rating"] = sample_submission["prediction_id"].map(ratings)
        env.predict(sample_submission)
    print("Wrote submission.csv")


if __name__ == "__main__":
    main()

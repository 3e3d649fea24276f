"""Baseline for the diabetes task: predict disease progression from age and sex alone.

Fits a linear regression, prints the mean absolute error (MAE) on a validation split of
train.csv, then refits on all of train.csv and writes predictions for test.csv to submission.csv.
"""

import pandas as pd
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_absolute_error
from sklearn.model_selection import train_test_split

FEATURES = ["age", "sex"]
TARGET = "target"


def make_model():
    return LinearRegression()


def main() -> None:
    train = pd.read_csv("train.csv")
    test = pd.read_csv("test.csv")

    fit_part, valid_part = train_test_split(train, test_size=0.2, random_state=0)
    model = make_model().fit(fit_part[FEATURES], fit_part[TARGET])
    valid_mae = mean_absolute_error(valid_part[TARGET], model.predict(valid_part[FEATURES]))
    print(f"Validation MAE: {valid_mae:.3f}")

    model = make_model().fit(train[FEATURES], train[TARGET])
    submission = pd.DataFrame({"id": test["id"], TARGET: model.predict(test[FEATURES])})
    submission.to_csv("submission.csv", index=False)
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

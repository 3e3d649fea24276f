"""Starter for the spaceship-titanic task: predict which passengers were transported.

Fits a logistic regression on three one-hot encoded columns (HomePlanet, Destination, VIP),
prints the accuracy on a validation split of train.csv, then refits on all of train.csv and
writes submission.csv (PassengerId, Transported). Improve the features and the model.
"""

import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

TARGET = "Transported"
COLUMNS = ["HomePlanet", "Destination", "VIP"]


def encode(frame: pd.DataFrame, columns=None) -> pd.DataFrame:
    encoded = pd.get_dummies(frame[COLUMNS].astype(str), dtype=float)
    return encoded if columns is None else encoded.reindex(columns=columns, fill_value=0.0)


def main() -> None:
    train = pd.read_csv("train.csv")
    test = pd.read_csv("test.csv")

    fit_part, valid_part = train_test_split(train, test_size=0.2, random_state=1)
    X_fit = encode(fit_part)
    model = LogisticRegression(max_iter=1000).fit(X_fit, fit_part[TARGET])
    accuracy = (model.predict(encode(valid_part, X_fit.columns)) == valid_part[TARGET]).mean()
    print(f"Validation accuracy: {accuracy:.4f}")

    X = encode(train)
    model = LogisticRegression(max_iter=1000).fit(X, train[TARGET])
    submission = pd.DataFrame({"PassengerId": test["PassengerId"], TARGET: model.predict(encode(test, X.columns))})
    submission.to_csv("submission.csv", index=False)
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

"""Starter for the feedback task: a skeleton whose model is a placeholder.

train_model returns no model and predict answers uniform random numbers in [0, 1): fill in both.
The script prints each measure's RMSE and their mean, the MCRMSE, on a tenth of train.csv held
out for validation, then writes the predictions for test.csv to submission.csv.
"""

import random

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split

DIMENSIONS = ["cohesion", "syntax", "vocabulary", "phraseology", "grammar", "conventions"]
SEED = 42

random.seed(SEED)
torch.manual_seed(SEED)
np.random.seed(SEED)


def rmse_per_dimension(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """The root mean squared error of each measure (column) over the essays (rows)."""
    errors = np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)
    return {f"rmse_{name}": float(np.sqrt(np.mean(errors[:, k] ** 2))) for k, name in enumerate(DIMENSIONS)}


def train_model(X_train, y_train, X_valid, y_valid):
    # TODO: define the model, train it and return it
    model = None
    return model


def predict(model, X):
    # TODO: predict with the model; return an array with one row per essay and one column per measure
    y_pred = np.random.rand(len(X), len(DIMENSIONS))
    return y_pred


if __name__ == "__main__":
    essays = pd.read_csv("train.csv", index_col="text_id").dropna(axis=0)
    X = essays["full_text"].tolist()
    y = essays[DIMENSIONS].to_numpy()

    # Hold out a tenth of the essays to validate on.
    X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size=0.10, random_state=SEED)

    model = train_model(X_train, y_train, X_valid, y_valid)

    metrics = rmse_per_dimension(y_valid, predict(model, X_valid))
    print(metrics)
    print("Validation MCRMSE:", np.mean(list(metrics.values())))

    test = pd.read_csv("test.csv", index_col="text_id")
    submission = pd.DataFrame(predict(model, test["full_text"].tolist()), columns=DIMENSIONS, index=test.index)
    submission.to_csv("submission.csv")

"""Starter for the feedback task: score essays of English language learners on six measures.

The model here is a placeholder: a scikit-learn DummyRegressor that predicts each measure's
mean over the training essays, whatever the essay says. It prints the MCRMSE on a validation
split of train.csv, then refits on all of train.csv and writes submission.csv (text_id and the
six scores). Replace it with a model that reads the text.
"""

import numpy as np
import pandas as pd
from sklearn.dummy import DummyRegressor
from sklearn.model_selection import train_test_split

SCORES = ["cohesion", "syntax", "vocabulary", "phraseology", "grammar", "conventions"]


def mcrmse(truth: np.ndarray, predicted: np.ndarray) -> float:
    return float(np.mean(np.sqrt(np.mean((truth - predicted) ** 2, axis=0))))


def train_model(texts: pd.Series, scores: pd.DataFrame):
    return DummyRegressor(strategy="mean").fit(np.zeros((len(texts), 1)), scores)


def predict(model, texts: pd.Series) -> np.ndarray:
    return model.predict(np.zeros((len(texts), 1)))


def main() -> None:
    train = pd.read_csv("train.csv")
    test = pd.read_csv("test.csv")

    fit_part, valid_part = train_test_split(train, test_size=0.2, random_state=1)
    model = train_model(fit_part["full_text"], fit_part[SCORES])
    print(f"Validation MCRMSE: {mcrmse(valid_part[SCORES].to_numpy(), predict(model, valid_part['full_text'])):.4f}")

    model = train_model(train["full_text"], train[SCORES])
    submission = pd.DataFrame(predict(model, test["full_text"]), columns=SCORES)
    submission.insert(0, "text_id", test["text_id"].to_numpy())
    submission.to_csv("submission.csv", index=False)
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

"""Reference solution for the feedback task: the starter's train_model and predict filled in.

Reads the text: word n-grams show vocabulary, set phrases and linking words; character n-grams
catch misspellings and missing capitals; a few counts (words, sentences, capitalised sentences)
describe the structure. One ridge regression per measure (scikit-learn's Ridge handles the six
outputs at once) with predictions clipped to the 1-5 scale. Validates on the starter's tenth of
train.csv, then refits on all of it and writes submission.csv (text_id and the six scores).
"""

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix, hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split

DIMENSIONS = ["cohesion", "syntax", "vocabulary", "phraseology", "grammar", "conventions"]
SEED = 42


def rmse_per_dimension(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    errors = np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float)
    return {f"rmse_{name}": float(np.sqrt(np.mean(errors[:, k] ** 2))) for k, name in enumerate(DIMENSIONS)}


def counts(texts: pd.Series) -> np.ndarray:
    sentences = texts.str.count(r"[.!?]") + 1
    return np.column_stack([np.log1p(texts.str.split().str.len()), np.log1p(sentences),
                            texts.str.count(r"(^|[.!?]\s+)[A-Z]") / sentences])


class Model:
    def __init__(self):
        self.words = TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)
        self.chars = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=3, sublinear_tf=True,
                                     lowercase=False, max_features=30000)
        self.ridge = Ridge(alpha=3.0)

    def features(self, texts: pd.Series, fit: bool = False):
        parts = [self.words.fit_transform(texts) if fit else self.words.transform(texts),
                 self.chars.fit_transform(texts) if fit else self.chars.transform(texts),
                 csr_matrix(counts(texts))]
        return hstack(parts).tocsr()

    def fit(self, texts: pd.Series, scores: np.ndarray) -> "Model":
        self.ridge.fit(self.features(texts, fit=True), scores)
        return self

    def predict(self, texts: pd.Series) -> np.ndarray:
        return np.clip(self.ridge.predict(self.features(texts)), 1.0, 5.0)


def train_model(X_train, y_train, X_valid, y_valid):
    return Model().fit(pd.Series(X_train), y_train)


def predict(model, X):
    return model.predict(pd.Series(X))


if __name__ == "__main__":
    essays = pd.read_csv("train.csv", index_col="text_id").dropna(axis=0)
    X = essays["full_text"].tolist()
    y = essays[DIMENSIONS].to_numpy()
    X_train, X_valid, y_train, y_valid = train_test_split(X, y, test_size=0.10, random_state=SEED)

    metrics = rmse_per_dimension(y_valid, predict(train_model(X_train, y_train, X_valid, y_valid), X_valid))
    print(metrics)
    print("Validation MCRMSE:", np.mean(list(metrics.values())))

    model = train_model(X, y, X_valid, y_valid)
    test = pd.read_csv("test.csv", index_col="text_id")
    submission = pd.DataFrame(predict(model, test["full_text"].tolist()), columns=DIMENSIONS, index=test.index)
    submission.to_csv("submission.csv")

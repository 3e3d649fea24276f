"""Improved solution for the feedback task.

Reads the text: word n-grams show vocabulary, set phrases and linking words; character n-grams
catch misspellings and missing capitals; a few counts (words, sentences, capitalised sentences)
describe the structure. One ridge regression per measure (scikit-learn's Ridge handles the six
outputs at once) with predictions clipped to the 1-5 scale. Prints the validation MCRMSE, then
refits on all of train.csv and writes submission.csv (text_id and the six scores).
"""

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix, hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split

SCORES = ["cohesion", "syntax", "vocabulary", "phraseology", "grammar", "conventions"]


def mcrmse(truth: np.ndarray, predicted: np.ndarray) -> float:
    return float(np.mean(np.sqrt(np.mean((truth - predicted) ** 2, axis=0))))


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

    def fit(self, texts: pd.Series, scores: pd.DataFrame) -> "Model":
        self.ridge.fit(self.features(texts, fit=True), scores.to_numpy())
        return self

    def predict(self, texts: pd.Series) -> np.ndarray:
        return np.clip(self.ridge.predict(self.features(texts)), 1.0, 5.0)


def main() -> None:
    train = pd.read_csv("train.csv")
    test = pd.read_csv("test.csv")

    fit_part, valid_part = train_test_split(train, test_size=0.2, random_state=1)
    model = Model().fit(fit_part["full_text"], fit_part[SCORES])
    print(f"Validation MCRMSE: {mcrmse(valid_part[SCORES].to_numpy(), model.predict(valid_part['full_text'])):.4f}")

    model = Model().fit(train["full_text"], train[SCORES])
    submission = pd.DataFrame(model.predict(test["full_text"]), columns=SCORES)
    submission.insert(0, "text_id", test["text_id"].to_numpy())
    submission.to_csv("submission.csv", index=False)
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

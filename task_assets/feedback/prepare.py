"""Data for the feedback task (Kaggle "Feedback Prize - English Language Learning").

public/train.csv              text_id, full_text, cohesion, syntax, vocabulary, phraseology, grammar, conventions
public/test.csv               text_id, full_text
public/sample_submission.csv  text_id and the six scores (all 3.0, to show the format)
hidden/answers.csv            text_id and the six scores of the test essays

Scores run from 1.0 to 5.0 in steps of 0.5. ``mini`` generates 1,600 short argumentative
essays whose wording follows their scores: richer vocabulary, linking words (cohesion),
subordinate clauses (syntax), set phrases (phraseology), and fewer grammar, spelling and
capitalisation mistakes (grammar, conventions) for higher scores. The six scores share a latent
writing ability, as the real ones do, plus their own variation. ``full`` downloads the
competition's train.csv (the Kaggle test set has no public scores). Both hold out test essays
by the original benchmark's rule: shuffle the rows with pandas (``random_state=42``, whatever the
seed), keep the first 98% in that order for train.csv and the last 2% for the test.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

COMPETITION = "feedback-prize-english-language-learning"
SCORES = ["cohesion", "syntax", "vocabulary", "phraseology", "grammar", "conventions"]
TRAIN_FRACTION = 0.98
SHUFFLE_STATE = 42  # the original's fixed shuffle
N_ESSAYS = 1600

TOPICS = ["school uniforms", "online classes", "summer jobs", "phones in class", "community service",
          "a four-day school week", "after-school sports", "working in groups", "homework", "extracurricular activities"]
BASIC = ["good", "bad", "thing", "things", "very", "many", "people", "do", "make", "get", "big", "help", "like", "want",
         "think", "know", "time", "because", "so", "really", "a lot", "nice", "important", "students", "school"]
ADVANCED = ["beneficial", "detrimental", "consequently", "perspective", "significant", "foster", "enhance",
            "acquire", "diligent", "comprehensive", "substantial", "prioritize", "facilitate", "valuable",
            "individuals", "opportunity", "responsibility", "ultimately", "essential", "numerous"]
LINKS = ["However,", "Furthermore,", "In addition,", "For example,", "Therefore,", "On the other hand,", "As a result,"]
CLAUSES = ["which means that", "although", "because", "even though", "so that", "while", "whereas"]
PHRASES = ["in my opinion", "take into account", "make a difference", "in the long run", "at the same time",
           "play an important role", "have a positive impact on"]
MISSPELL = {"because": "becuase", "a lot": "alot", "don't": "dont", "their": "there", "believe": "beleive",
            "different": "diferent", "students": "studens", "really": "realy", "think": "thinck"}


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    write(generate(np.random.default_rng(seed), N_ESSAYS), pathlib.Path(public), pathlib.Path(hidden))


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    from pytest_mlab.task_api import kaggle_competition

    folder = kaggle_competition(COMPETITION, downloads)
    essays = pd.read_csv(folder / "train.csv", dtype={"text_id": str}, keep_default_na=False)
    write(essays, pathlib.Path(public), pathlib.Path(hidden))


def split(essays: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(train, test)`` as the original benchmark cuts them, so that full scores compare with the original's."""
    from pytest_mlab.task_api import shuffle_split

    return shuffle_split(essays, TRAIN_FRACTION, SHUFFLE_STATE)


def write(essays: pd.DataFrame, public: pathlib.Path, hidden: pathlib.Path) -> None:
    train, test = split(essays)
    train.to_csv(public / "train.csv", index=False)
    test[["text_id", "full_text"]].to_csv(public / "test.csv", index=False)
    test[["text_id"]].assign(**{score: 3.0 for score in SCORES}).to_csv(public / "sample_submission.csv", index=False)
    test[["text_id"] + SCORES].to_csv(hidden / "answers.csv", index=False)


def generate(rng: np.random.Generator, n: int) -> pd.DataFrame:
    ability = rng.normal(0, 1, n)
    raw = 3.05 + 0.55 * (0.8 * ability[:, None] + 0.6 * rng.normal(0, 1, (n, len(SCORES))))
    scores = np.clip(np.round(raw * 2) / 2, 1.0, 5.0)
    ids = sorted({"".join(rng.choice(list("0123456789ABCDEF"), 12)) for _ in range(n + 10)})[:n]
    order = rng.permutation(n)
    texts = [_essay(rng, dict(zip(SCORES, scores[i]))) for i in range(n)]
    frame = pd.DataFrame({"text_id": np.array(ids)[order], "full_text": texts})
    for k, score in enumerate(SCORES):
        frame[score] = scores[:, k]
    return frame


def _level(score: float) -> float:
    """0 for a 1.0 essay, 1 for a 5.0 essay."""
    return (score - 1.0) / 4.0


def _essay(rng: np.random.Generator, score: dict[str, float]) -> str:
    topic = rng.choice(TOPICS)
    paragraphs = []
    for _p in range(int(rng.integers(2, 5))):
        sentences = [_sentence(rng, score, topic) for _s in range(int(rng.integers(3, 6)))]
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def _sentence(rng: np.random.Generator, score: dict[str, float], topic: str) -> str:
    vocabulary = _level(score["vocabulary"])
    words = ["i think" if rng.random() > vocabulary else "I believe", topic, "is"]
    for _w in range(int(rng.integers(5, 9))):
        words.append(rng.choice(ADVANCED) if rng.random() < 0.1 + 0.6 * vocabulary else rng.choice(BASIC))
    if rng.random() < 0.1 + 0.7 * _level(score["syntax"]):
        words += [rng.choice(CLAUSES), "students", rng.choice(BASIC + ADVANCED), "more"]
    if rng.random() < 0.1 + 0.6 * _level(score["phraseology"]):
        words.insert(int(rng.integers(1, len(words))), rng.choice(PHRASES))
    if rng.random() < 0.05 + 0.6 * _level(score["cohesion"]):
        words.insert(0, rng.choice(LINKS))
    grammar = _level(score["grammar"])
    if rng.random() > 0.2 + 0.8 * grammar:
        words = [word for word in words if word != "is"] if rng.random() < 0.5 else words + ["is", "are"]
    conventions = _level(score["conventions"])
    words = [MISSPELL.get(word, word) if rng.random() > 0.15 + 0.85 * conventions else word for word in words]
    text = " ".join(str(word) for word in words)
    if rng.random() < 0.2 + 0.8 * conventions:
        text = text[0].upper() + text[1:]
    return text + ("." if rng.random() < 0.3 + 0.7 * conventions else "")

"""Data for the imdb task: movie reviews labelled positive (1) or negative (0), and DistilBERT.

public/imdb/train.parquet               text (string), label (int64: 0 negative, 1 positive)
public/imdb/test.parquet                text, label (-1: the labels are hidden)
public/imdb/unsupervised.parquet        text, label (-1: unlabelled reviews)
public/distilbert-base-uncased/         config.json, model.safetensors, tokenizer files
                                        (``from_pretrained`` loads the folder)
hidden/answers.csv                      idx (a test review's position in test.parquet), label

The three files have the splits, columns and column types of the HF dataset ``imdb``, so
``datasets.load_dataset("parquet", data_files=...)`` gives the DatasetDict that code written for
``load_dataset("imdb")`` expects (every split must share one schema for that, hence the -1s).
``full`` takes the HF dataset itself (25,000 train, 25,000 test and 50,000 unsupervised reviews)
and the real ``distilbert-base-uncased`` weights. ``mini`` writes the same layout offline:
generated reviews whose sentiment comes from a few opinion words among neutral ones (twice as
many unlabelled ones as training ones, as in the real dataset), a tiny randomly initialised
DistilBERT (same architecture, small dimensions) and a WordPiece vocabulary built from the
training reviews. The parquet files and the model folder are the same bytes for the same seed.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

MODEL_DIR = "distilbert-base-uncased"
DATA_DIR = "imdb"
HIDDEN_LABEL = -1  # the HF dataset's label for reviews without one

MINI_TRAIN, MINI_TEST, MINI_UNSUPERVISED = 1200, 400, 2400
POSITIVE = ["great", "wonderful", "brilliant", "moving", "superb", "charming", "delightful", "gripping",
            "masterful", "touching", "hilarious", "stunning", "beautiful", "excellent", "enjoyable"]
NEGATIVE = ["awful", "boring", "dull", "terrible", "clumsy", "tedious", "bland", "poor", "horrible",
            "pointless", "messy", "weak", "annoying", "forgettable", "waste"]
NEUTRAL = ("the a an this that film movie story plot actor actress director scene scenes camera music "
           "score ending script dialogue character characters cast role screen minutes hour night "
           "sequel theatre audience was is were it its his her their with and but or of in on to at "
           "as for by from about after before during while then also just really quite rather very "
           "some many most every one two first last long short old new young family city war love "
           "house friend time year world life man woman child girl boy father mother brother sister "
           "police car road ship town school doctor king team game book song dance picture shot "
           "effects budget studio version remake series episode season").split()


def _review(rng: np.random.Generator, label: int) -> str:
    """A review: neutral words around opinion words, more of them on the label's side."""
    words = list(rng.choice(NEUTRAL, size=int(rng.integers(15, 40))))
    n_own = int(rng.integers(2, 5))
    n_other = int(rng.integers(0, n_own - 1))
    own, other = (POSITIVE, NEGATIVE) if label == 1 else (NEGATIVE, POSITIVE)
    for opinion in [*rng.choice(own, size=n_own), *rng.choice(other, size=n_other)]:
        words.insert(int(rng.integers(0, len(words) + 1)), str(opinion))
    return " ".join(words).capitalize() + "."


def _reviews(rng: np.random.Generator, count: int) -> pd.DataFrame:
    labels = rng.permutation(np.arange(count) % 2).astype(np.int64)
    return pd.DataFrame({"text": [_review(rng, int(label)) for label in labels], "label": labels})


def _write_splits(public: pathlib.Path, hidden: pathlib.Path, splits: dict[str, pd.DataFrame]) -> None:
    """Write each split as text and label, the test labels replaced by -1 and kept in the hidden answers."""
    data = public / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    frames = {name: frame[["text", "label"]].reset_index(drop=True).astype({"label": "int64"})
              for name, frame in splits.items()}
    test = frames["test"]
    pd.DataFrame({"idx": np.arange(len(test), dtype=np.int64), "label": test["label"]}).to_csv(
        hidden / "answers.csv", index=False)
    frames["test"] = test.assign(label=np.int64(HIDDEN_LABEL))
    frames["unsupervised"] = frames["unsupervised"].assign(label=np.int64(HIDDEN_LABEL))
    for name, frame in frames.items():
        frame.to_parquet(data / f"{name}.parquet", index=False)


def _tiny_distilbert(texts: list[str], folder: pathlib.Path, seed: int) -> None:
    """A randomly initialised DistilBERT with small dimensions and a WordPiece vocabulary of the texts.

    The vocabulary (vocab.txt, as in the real model) is the special tokens, every word of the
    texts, then single characters as word pieces, so unseen words still tokenize; sorted, so
    the files are the same for the same texts.
    """
    import string

    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import DistilBertConfig, DistilBertForSequenceClassification, DistilBertTokenizerFast

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = sorted({word for text in texts for word in text.lower().replace(".", " ").split()})
    characters = list(string.ascii_lowercase + string.digits + string.punctuation)
    pieces = [f"##{c}" for c in string.ascii_lowercase + string.digits]
    vocab = {token: index for index, token in enumerate(dict.fromkeys(special + characters + words + pieces))}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    DistilBertTokenizerFast(tokenizer_object=tokenizer, model_max_length=128).save_pretrained(folder)
    (folder / "vocab.txt").write_text("".join(f"{token}\n" for token in vocab))

    torch.manual_seed(seed)
    config = DistilBertConfig(vocab_size=len(vocab), max_position_embeddings=128,
                              dim=32, n_layers=2, n_heads=2, hidden_dim=64, num_labels=2, pad_token_id=0)
    DistilBertForSequenceClassification(config).save_pretrained(folder)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    rng = np.random.default_rng(seed)
    train, test = _reviews(rng, MINI_TRAIN), _reviews(rng, MINI_TEST)
    unsupervised = _reviews(rng, MINI_UNSUPERVISED)  # drawn last: train and test stay as they were
    _write_splits(public, hidden, {"train": train, "test": test, "unsupervised": unsupervised})
    _tiny_distilbert(train["text"].tolist(), public / MODEL_DIR, seed)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The HF dataset ``imdb`` (its own three splits) and the real distilbert-base-uncased."""
    from pytest_mlab.task_api import hf_dataset, hf_snapshot

    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    dataset = hf_dataset("imdb", pathlib.Path(downloads))
    splits = {name: dataset[name].to_pandas() for name in ("train", "test", "unsupervised")}
    # The test split is sorted by label; shuffle it so that a review's position says nothing about its label.
    splits["test"] = splits["test"].iloc[np.random.default_rng(seed).permutation(len(splits["test"]))]
    _write_splits(public, hidden, splits)
    hf_snapshot("distilbert-base-uncased", public / MODEL_DIR)

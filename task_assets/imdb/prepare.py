"""Data for the imdb task: movie reviews labelled positive (1) or negative (0), and DistilBERT.

public/imdb/train.parquet               text (string), label (int64: 0 negative, 1 positive)
public/imdb/test.parquet                idx (int64), text (string); labels are hidden
public/distilbert-base-uncased/         config.json, model.safetensors, tokenizer files
                                        (``from_pretrained`` loads the folder)
hidden/answers.csv                      idx, label

``full`` takes the HF dataset ``imdb`` (25,000 train and 25,000 test reviews) and the real
``distilbert-base-uncased`` weights. ``mini`` writes the same layout offline: generated reviews
whose sentiment comes from a few opinion words among neutral ones, a tiny randomly initialised
DistilBERT (same architecture, small dimensions) and a WordPiece vocabulary built from the reviews.
The parquet files and the model folder are the same bytes for the same seed.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

MODEL_DIR = "distilbert-base-uncased"
DATA_DIR = "imdb"

MINI_TRAIN, MINI_TEST = 1200, 400
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


def _write_split(public: pathlib.Path, hidden: pathlib.Path, train: pd.DataFrame, test: pd.DataFrame) -> None:
    """Write train (text, label), test (idx, text) and the hidden test labels."""
    data = public / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    train = train[["text", "label"]].reset_index(drop=True).astype({"label": "int64"})
    test = test.reset_index(drop=True)
    test.insert(0, "idx", np.arange(len(test), dtype=np.int64))
    train.to_parquet(data / "train.parquet", index=False)
    test[["idx", "text"]].to_parquet(data / "test.parquet", index=False)
    test[["idx", "label"]].astype({"label": "int64"}).to_csv(hidden / "answers.csv", index=False)


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
    _write_split(public, hidden, train, test)
    _tiny_distilbert(train["text"].tolist(), public / MODEL_DIR, seed)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The HF dataset ``imdb`` (its own train/test split) and the real distilbert-base-uncased."""
    from pytest_mlab.data.hf import hf_dataset, hf_snapshot

    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    dataset = hf_dataset("imdb", pathlib.Path(downloads))
    train, test = (dataset[split].to_pandas() for split in ("train", "test"))
    # The test split is sorted by label; shuffle it so that idx says nothing about the answer.
    test = test.iloc[np.random.default_rng(seed).permutation(len(test))]
    _write_split(public, hidden, train, test)
    hf_snapshot("distilbert-base-uncased", public / MODEL_DIR)

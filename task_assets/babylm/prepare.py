"""Data for the BabyLM task: the 10M-word BabyLM corpus, its dev split and a hidden test split.

public/babylm_data/babylm_10M/<source>.train   plain text, one utterance or sentence per line
public/babylm_data/babylm_dev/<source>.dev     the same sources, held out for validation
public/gpt2/                                   the GPT-2 tokenizer (and config) the starter uses
hidden/babylm_test/<source>.test               text the grader computes perplexity on
hidden/gpt2/                                   a copy of the tokenizer: the grader tokenizes with it

``full`` downloads the BabyLM 2023 strict-small release (babylm_10M, babylm_dev, babylm_test) and
the ``gpt2`` tokenizer files. ``mini`` writes the same layout offline: each source is text
generated from a small grammar of its own (child-directed speech, stories, subtitles, ...), and
the tokenizer is a word-level one over that text.
"""

from __future__ import annotations

import pathlib
import shutil
import zipfile

import numpy as np

SOURCES = ["aochildes", "bnc_spoken", "cbt", "children_stories", "gutenberg", "open_subtitles", "qed",
           "simple_wikipedia", "switchboard", "wikipedia"]
SPLITS = {"babylm_10M": ("train", 400), "babylm_dev": ("dev", 40), "babylm_test": ("test", 40)}
TOKENIZER = "gpt2"
# The BabyLM 2023 release, where the original benchmark fetches it. No published checksum: the
# archive is checked by its layout after unpacking.
FULL_URL = "https://github.com/babylm/babylm.github.io/raw/main/babylm_data.zip"

_NOUNS = ("dog cat ball book baby mummy daddy girl boy bird car tree house cup apple teddy train fish duck "
          "garden door window table bed hat shoe cake milk water moon star boat king queen").split()
_VERBS = ("sees likes wants has takes finds gives eats reads holds pushes throws makes loves opens "
          "watches needs drops").split()
_ADJECTIVES = "big little red blue happy sad old new soft funny green tiny".split()
_OPENERS = ("look oh yes no well okay so now and then but".split())


def _sentence(rng: np.random.Generator, style: int) -> str:
    """A sentence of a source's style: the same grammar, different habits per source."""
    def noun_phrase() -> str:
        adjective = f"{rng.choice(_ADJECTIVES)} " if rng.random() < 0.3 + 0.05 * style else ""
        return f"the {adjective}{rng.choice(_NOUNS)}"

    words = [noun_phrase(), str(rng.choice(_VERBS)), noun_phrase()]
    if style % 3 == 0:
        words.insert(0, str(rng.choice(_OPENERS)))
    if style % 2 == 1 and rng.random() < 0.5:
        words += ["and", str(rng.choice(_VERBS)), noun_phrase()]
    return " ".join(words) + (" ?" if style % 4 == 2 else " .")


def _write_corpus(root: pathlib.Path, folder: str, extension: str, lines: int, rng: np.random.Generator) -> None:
    (root / folder).mkdir(parents=True, exist_ok=True)
    for style, source in enumerate(SOURCES):
        text = "\n".join(_sentence(rng, style) for _ in range(lines))
        (root / folder / f"{source}.{extension}").write_text(text + "\n")


def _word_tokenizer(texts: list[str], folder: pathlib.Path) -> None:
    """A word-level tokenizer over the texts, saved where the real GPT-2 tokenizer would be."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = sorted({word for text in texts for word in text.split()})
    vocab = {token: index for index, token in enumerate(["<|endoftext|>", "<unk>", *words])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                            unk_token="<unk>").save_pretrained(folder)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    rng = np.random.default_rng(seed)
    for folder, (extension, lines) in SPLITS.items():
        _write_corpus(hidden if folder == "babylm_test" else public / "babylm_data", folder, extension, lines, rng)
    texts = [path.read_text() for path in sorted((public / "babylm_data").rglob("*.*"))]
    texts += [path.read_text() for path in sorted((hidden / "babylm_test").glob("*.test"))]
    _word_tokenizer(texts, public / TOKENIZER)
    shutil.copytree(public / TOKENIZER, hidden / TOKENIZER)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The BabyLM strict-small release; its test split is hidden, its train and dev splits public."""
    from pytest_mlab.data.fetch import download
    from pytest_mlab.data.hf import hf_snapshot

    public, hidden, downloads = pathlib.Path(public), pathlib.Path(hidden), pathlib.Path(downloads)
    archive = download(FULL_URL, downloads / "babylm_data.zip")
    with zipfile.ZipFile(archive) as bundle:
        for member in bundle.infolist():
            parts = pathlib.PurePosixPath(member.filename).parts
            folder = next((part for part in parts if part in SPLITS), None)
            if member.is_dir() or folder is None or parts[-1].startswith("."):
                continue
            target = (hidden if folder == "babylm_test" else public / "babylm_data") / folder / parts[-1]
            target.parent.mkdir(parents=True, exist_ok=True)
            with bundle.open(member) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
    missing = [folder for folder in SPLITS
               if not list(((hidden if folder == "babylm_test" else public / "babylm_data") / folder).glob("*"))]
    if missing:
        from pytest_mlab.errors import DataError
        raise DataError(f"{archive}: the BabyLM archive has no {', '.join(missing)} folder; delete it and prepare "
                        f"again, or check {FULL_URL}")
    hf_snapshot(TOKENIZER, public / TOKENIZER)
    shutil.copytree(public / TOKENIZER, hidden / TOKENIZER,
                    ignore=shutil.ignore_patterns("*.safetensors", "*.bin", "*.h5", "*.msgpack", "*.onnx", "onnx"))

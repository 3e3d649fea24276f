"""Data for the BabyLM task: the 10M-word BabyLM corpus, its dev split, a hidden test split, and GPT-2.

public/babylm_data/babylm_10M/<source>.train   plain text, one utterance or sentence per line
public/babylm_data/babylm_dev/<source>.dev     the same sources, held out for validation
public/gpt2/                                   GPT-2's configuration (config.json) and tokenizer
                                               (vocab.json, merges.txt, tokenizer.json,
                                               tokenizer_config.json); no weights
hidden/babylm_test/<source>.test               text the grader computes perplexity on

``full`` downloads the BabyLM 2023 strict-small release (babylm_10M, babylm_dev, babylm_test) and
the ``gpt2`` configuration and tokenizer files. ``mini`` writes the same layout offline: each
source is text generated from a small grammar of its own (child-directed speech, stories,
subtitles, ...); the tokenizer is a byte-level BPE, as GPT-2's, trained on that text, and the
configuration a GPT-2 of MINI_MODEL's small dimensions with GPT-2's 1,024 positions, so that the
starter trains and is scored on blocks of the real length.
"""

from __future__ import annotations

import pathlib
import shutil
import zipfile

import numpy as np

SOURCES = ["aochildes", "bnc_spoken", "cbt", "children_stories", "gutenberg", "open_subtitles", "qed",
           "simple_wikipedia", "switchboard", "wikipedia"]
SPLITS = {"babylm_10M": ("train", 250), "babylm_dev": ("dev", 100), "babylm_test": ("test", 100)}
TOKENIZER = "gpt2"
# The files of the gpt2 repository that the task keeps: configuration and tokenizer, no weights.
GPT2_FILES = ("config.json", "generation_config.json", "vocab.json", "merges.txt", "tokenizer.json",
              "tokenizer_config.json")
# GPT-2's layout with small dimensions: 2 layers, 32 dimensions, 2 heads, GPT-2's 1,024 positions.
MINI_MODEL = {"n_layer": 2, "n_embd": 32, "n_head": 2, "n_positions": 1024}
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


def _mini_gpt2(texts: list[str], folder: pathlib.Path) -> None:
    """A byte-level BPE tokenizer trained on the texts, and a small GPT-2 configuration for it,
    in the files and layout of the real gpt2 repository (its tokenizer_config limits inputs to
    1,024 tokens, as GPT-2's does). Training converges to the same merges on every run."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2TokenizerFast

    end_of_text = "<|endoftext|>"
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=1000, special_tokens=[end_of_text], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.model.save(str(folder))  # vocab.json and merges.txt
    GPT2TokenizerFast(tokenizer_object=tokenizer, bos_token=end_of_text, eos_token=end_of_text,
                      unk_token=end_of_text, model_max_length=1024).save_pretrained(folder)
    end_id = tokenizer.token_to_id(end_of_text)
    GPT2Config(vocab_size=tokenizer.get_vocab_size(), bos_token_id=end_id, eos_token_id=end_id,
               **MINI_MODEL).save_pretrained(folder)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    rng = np.random.default_rng(seed)
    for folder, (extension, lines) in SPLITS.items():
        _write_corpus(hidden if folder == "babylm_test" else public / "babylm_data", folder, extension, lines, rng)
    texts = [path.read_text() for path in sorted((public / "babylm_data" / "babylm_10M").glob("*.train"))]
    _mini_gpt2(texts, public / TOKENIZER)
    _keep_reference_tokenizer(public / TOKENIZER, hidden)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The BabyLM strict-small release; its test split is hidden, its train and dev splits public."""
    from pytest_mlab.task_api import download, hf_snapshot

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
        from pytest_mlab.task_api import DataError
        raise DataError(f"{archive}: the BabyLM archive has no {', '.join(missing)} folder; delete it and prepare "
                        f"again, or check {FULL_URL}")
    hf_snapshot(TOKENIZER, public / TOKENIZER)
    _keep_only(public / TOKENIZER, GPT2_FILES)
    _keep_reference_tokenizer(public / TOKENIZER, hidden)


def _keep_reference_tokenizer(folder: pathlib.Path, hidden: pathlib.Path) -> None:
    """A copy of the task's tokenizer beside the answers: the grader checks against it that the
    submission tokenizes the test text the same way (perplexities over other tokens do not compare)."""
    target = hidden / "reference_tokenizer"
    target.mkdir(parents=True, exist_ok=True)
    for name in GPT2_FILES:
        if name != "generation_config.json" and (folder / name).is_file():
            shutil.copy2(folder / name, target / name)


def _keep_only(folder: pathlib.Path, names: tuple[str, ...]) -> None:
    """Delete everything in ``folder`` but ``names``: the pretrained weights (which the task
    forbids) and the download's bookkeeping."""
    for path in folder.iterdir():
        if path.name not in names:
            shutil.rmtree(path) if path.is_dir() else path.unlink()

"""Data for the llama-inference task: a LLaMA model, WikiText text, hidden prompts to time.

public/llama-7b/        config.json, weights, tokenizer files (``from_pretrained`` loads it)
public/wikitext/test.txt  WikiText-103 test text, one row of the dataset per line: all of it,
                        as the original's script reads it
hidden/prompts_config.json  the shape of the timed prompts (BATCHES, BATCH, CONTEXT) and the
                        tokenizer's vocabulary (its size, its special ids, BOS): the measure step's
                        only input (``metric.measure.inputs``)

The agent's script makes its prompts as the original's did: every row of the text, tokenized and
cut at CONTEXT tokens (the tokenizer's BOS first), is kept if it reaches CONTEXT tokens; the first
BATCHES * BATCH kept rows are its prompts, in order: on ``full`` the original's 100 batches
exactly. The timed prompts are not those, nor any rows of a text: the measure step draws them at
each grading from a fresh seed (``mlab_measure.grading_seed``), BOS then CONTEXT - 1 tokens of
the vocabulary, the same shape; the grader checks the submission's output against the unchanged
starter's on the same draw, so no answer can be computed ahead. The time of a forward pass of
fixed shape does not depend on which tokens fill it. ``mini`` is generated wiki-like text, for a
small randomly initialised LlamaForCausalLM (same architecture, 4 layers of width 320) with a
word-level tokenizer: the same number and shape of prompts, for a model thousands of times
cheaper.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

MODEL_DIR = "llama-7b"
TEXT = "wikitext/test.txt"
CONTEXT, NEW_TOKENS, BATCH, BATCHES = 128, 1, 4, 100   # as in env/inference.py, and the original

_TOPICS = ("river valley castle empire battle song album band church railway station village county "
           "island ship army king queen bishop poet novel film season league club player river bridge "
           "mountain forest bird species storm hurricane road highway tower temple city province").split()
_WORDS = ("the of and in to a was is for on as by with from at that which his her their it its an "
          "were had been after during first second later early new old large small north south east "
          "west built played released recorded described named known became founded opened closed "
          "won lost led moved returned remained received produced written published began ended "
          "century year years game games time record number part group series history team people "
          "area region government company music work works life family war world members local "
          "national public several many some most two three four one five million").split()


def _rows(rng: np.random.Generator, count: int) -> list[str]:
    """Wiki-like dataset rows, each ending in a newline: headings ' = Title = ' and paragraphs of
    plain words with years, most of them longer than CONTEXT tokens."""
    rows = []
    for _ in range(count):
        topic = str(rng.choice(_TOPICS))
        rows.append(f" = {topic.capitalize()} {int(rng.integers(1, 99))} = \n")
        sentences = []
        for _ in range(int(rng.integers(8, 14))):
            words = [topic] + list(rng.choice(_WORDS, size=int(rng.integers(8, 20))))
            words.insert(int(rng.integers(1, len(words))), str(int(rng.integers(1800, 2020))))
            sentences.append(" ".join(words).capitalize() + " .")
        rows.append(" " + " ".join(sentences) + " \n")
    return rows


def _small_llama(rows: list[str], folder: pathlib.Path, seed: int) -> None:
    """A random LlamaForCausalLM with small dimensions and a word-level tokenizer of the rows."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<unk>", "<s>", "</s>"]
    words = sorted({word for row in rows for word in row.lower().split()} | set("0123456789=.,"))
    vocab = {token: index for index, token in enumerate(special + words)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(folder)

    torch.manual_seed(seed)
    # Small enough to stay cheap, large enough that generate's own work (about 6 CPU seconds over the
    # 100 batches) dwarfs the noise of start-up, which the CPU timing subtracts: with a model a
    # quarter this size, the unchanged starter timed against itself scored anywhere in 0.8-1.0.
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=320, intermediate_size=864, num_hidden_layers=4,
                         num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=256,
                         bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # larger output weights than the default init: varied greedy continuations
        model.lm_head.weight.mul_(20.0)
    model.save_pretrained(folder)


def _prompt_rows(rows: list[str], tokenizer, count: int) -> tuple[np.ndarray, list[int]]:
    """The first ``count`` rows that reach CONTEXT tokens, cut there, and their indices in ``rows``."""
    ids = tokenizer(rows, truncation=True, max_length=CONTEXT)["input_ids"]
    kept = [index for index, row in enumerate(ids) if len(row) == CONTEXT][:count]
    if len(kept) < count:
        raise ValueError(f"the text has {len(kept)} rows of at least {CONTEXT} tokens; the prompts need {count}")
    return np.array([ids[index] for index in kept], dtype=np.int64), kept


def _write(public: pathlib.Path, hidden: pathlib.Path, rows: list[str]) -> None:
    """``rows`` as the agent's text (checked to hold the starter's prompts) and the shape and
    vocabulary of the prompts the measure step draws, for the tokenizer in public/llama-7b/."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(public / MODEL_DIR)
    _prompt_rows(rows, tokenizer, BATCHES * BATCH)  # the agent's script must find its 100 batches
    (public / "wikitext").mkdir(parents=True, exist_ok=True)
    (public / TEXT).write_text("".join(rows))
    hidden.mkdir(parents=True, exist_ok=True)
    config = {"batches": BATCHES, "batch": BATCH, "context": CONTEXT, "new_tokens": NEW_TOKENS,
              "vocab_size": len(tokenizer), "bos_token_id": tokenizer.bos_token_id,
              "special_ids": sorted(set(tokenizer.all_special_ids))}
    (hidden / "prompts_config.json").write_text(json.dumps(config, sort_keys=True) + "\n")


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    rows = _rows(np.random.default_rng(seed), 520)  # about 500 reach CONTEXT tokens: the starter's 400 prompts
    _small_llama(rows, public / MODEL_DIR, seed)
    _write(public, hidden, rows)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """huggyllama/llama-7b and the WikiText-103 test split (the original's ``wikitext-103-v1``)."""
    from pytest_mlab.task_api import hf_dataset, hf_snapshot

    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    # The hub repository keeps each configuration in a folder of parquet files.
    test = hf_dataset("Salesforce/wikitext", pathlib.Path(downloads), data_dir="wikitext-103-v1", split="test")
    hf_snapshot("huggyllama/llama-7b", public / MODEL_DIR)
    _write(public, hidden, [row if row.endswith("\n") or not row else row + "\n" for row in test["text"]])

"""Data for the llama-inference task: a LLaMA model, WikiText test text, hidden prompts to time.

public/llama-7b/        config.json, model.safetensors, tokenizer files (``from_pretrained`` loads it)
public/wikitext/test.txt  WikiText-103 test text, one paragraph per line (wiki markup as in the
                        original raw files)
hidden/prompts.npz      ``input_ids`` (batches, batch size, context) generate is timed on, and
                        ``expected`` (the same with the greedy continuation) its output must match:
                        the grader's
hidden/prompts_inputs.npy  the same ``input_ids`` alone: the measure step's input
                        (``metric.measure.inputs``), the only hidden file that reaches a sandbox

``mini`` writes a tiny randomly initialised LlamaForCausalLM (same architecture, small
dimensions), a word-level tokenizer over a generated wiki-like text, and that text. ``full``
fetches the real weights (``huggyllama/llama-7b``, the model the paper used) and the WikiText-103
test split. Hidden prompts come from text the agent never sees; the expected continuations
are computed here with the model's plain greedy decoding.
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

MODEL_DIR = "llama-7b"
TEXT = "wikitext/test.txt"
CONTEXT, NEW_TOKENS, BATCH, BATCHES = 64, 32, 4, 2   # as in env/inference.py

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


def _paragraphs(rng: np.random.Generator, count: int) -> list[str]:
    """Wiki-like paragraphs: headings ' = Title = ' and sentences of plain words with digits."""
    lines = []
    for _ in range(count):
        topic = str(rng.choice(_TOPICS))
        lines.append(f" = {topic.capitalize()} {int(rng.integers(1, 99))} = ")
        sentences = []
        for _ in range(int(rng.integers(4, 9))):
            words = [topic] + list(rng.choice(_WORDS, size=int(rng.integers(8, 20))))
            words.insert(int(rng.integers(1, len(words))), str(int(rng.integers(1800, 2020))))
            sentences.append(" ".join(words).capitalize() + " .")
        lines.append(" " + " ".join(sentences) + " ")
    return lines


def _tiny_llama(texts: list[str], folder: pathlib.Path, seed: int) -> None:
    """A random LlamaForCausalLM with small dimensions and a word-level tokenizer of the texts."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    special = ["<unk>", "<s>", "</s>"]
    words = sorted({word for text in texts for word in text.lower().split()} | set("0123456789=.,"))
    vocab = {token: index for index, token in enumerate(special + words)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>",
                            unk_token="<unk>").save_pretrained(folder)

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                         bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # larger output weights than the default init: varied greedy continuations
        model.lm_head.weight.mul_(20.0)
    model.save_pretrained(folder)


def _hidden_prompts(folder: pathlib.Path, text: list[str], hidden: pathlib.Path, seed: int) -> None:
    """Token windows from unseen text, with the greedy continuation of the model in ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = np.concatenate([tokenizer(line)["input_ids"] for line in text if line.strip()])
    rng = np.random.default_rng(seed)
    starts = rng.choice(len(ids) - CONTEXT, size=BATCHES * BATCH, replace=False)
    prompts = np.stack([ids[s:s + CONTEXT] for s in starts]).reshape(BATCHES, BATCH, CONTEXT).astype(np.int64)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    torch.manual_seed(seed)
    with torch.no_grad():
        expected = np.stack([model.generate(torch.from_numpy(batch), attention_mask=torch.ones_like(
            torch.from_numpy(batch)), max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, do_sample=False,
            pad_token_id=tokenizer.eos_token_id).numpy() for batch in prompts])
    from pytest_mlab.data.formats import save_npz
    save_npz(hidden / "prompts.npz", input_ids=prompts, expected=expected,
             config=np.array(json.dumps({"new_tokens": NEW_TOKENS})))
    np.save(hidden / "prompts_inputs.npy", prompts, allow_pickle=False)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    rng = np.random.default_rng(seed)
    shown, unseen = _paragraphs(rng, 120), _paragraphs(rng, 40)
    (public / "wikitext").mkdir(parents=True, exist_ok=True)
    (public / TEXT).write_text("\n".join(shown) + "\n")
    _tiny_llama(shown + unseen, public / MODEL_DIR, seed)
    _hidden_prompts(public / MODEL_DIR, unseen, hidden, seed)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """huggyllama/llama-7b and WikiText-103: test split for the agent, validation split hidden."""
    from pytest_mlab.data.hf import hf_dataset, hf_snapshot

    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    # The hub repository keeps each configuration in a folder of parquet files.
    wikitext = hf_dataset("Salesforce/wikitext", pathlib.Path(downloads), data_dir="wikitext-103-raw-v1")
    (public / "wikitext").mkdir(parents=True, exist_ok=True)
    (public / TEXT).write_text("\n".join(wikitext["test"]["text"]))
    hf_snapshot("huggyllama/llama-7b", public / MODEL_DIR)
    _hidden_prompts(public / MODEL_DIR, wikitext["validation"]["text"][:2000], hidden, seed)

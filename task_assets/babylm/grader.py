"""Grader for the BabyLM task: perplexity of the saved model on the hidden babylm_test text.

The submission is the folder output/ as train.py saves it: a causal language model that
transformers loads with ``AutoModelForCausalLM.from_pretrained`` from safetensors weights, and
the tokenizer it was trained with (no pickled files and no custom code are loaded: the folder
comes from untrusted code). As in the benchmark's own scoring, the test text is read and cut
into blocks by this task's copy of env/babyLM_for_hf.py (never the workspace's): the tokenizer
in output/ tokenizes it in groups of 1,000 lines, in blocks of its maximum length capped at
1,024 tokens. The score is exp(mean next-token loss) over all blocks (lower is better). The saved
tokenizer must split the test text exactly as the task's gpt2/ tokenizer does.
"""

from __future__ import annotations

import importlib.util
import math
import pathlib

from pytest_mlab.task_api import InvalidSubmission

OUTPUT = "output"
BATCH = 8
READER = pathlib.Path(__file__).resolve().parent / "env" / "babyLM_for_hf.py"
REFERENCE_TOKENIZER = "reference_tokenizer"  # prepare's copy of gpt2/'s tokenizer, beside the answers


def _reader():
    """The task's own babyLM_for_hf module (agents may edit the workspace's copy)."""
    spec = importlib.util.spec_from_file_location("babylm_reader", READER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_model(folder: pathlib.Path):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if not (folder / "config.json").is_file():
        raise InvalidSubmission(f"{OUTPUT}/config.json: not found; train.py must save the model with "
                                f"model.save_pretrained('{OUTPUT}')")
    if not list(folder.glob("*.safetensors")):
        raise InvalidSubmission(f"{OUTPUT}/: no .safetensors weights; save with model.save_pretrained('{OUTPUT}') "
                                f"(safe_serialization, the default); pickled weights are not loaded")
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True, trust_remote_code=False,
                                                     dtype=torch.float32)
    except Exception as error:  # transformers raises many types for a broken folder
        raise InvalidSubmission(f"{OUTPUT}/: transformers cannot load a causal language model from it: "
                                f"{type(error).__name__}: {str(error)[:500]}") from None
    return config, model.eval()


def _load_tokenizer(folder: pathlib.Path):
    """The tokenizer saved with the model (transformers would otherwise make an empty one from
    config.json alone)."""
    from transformers import AutoTokenizer

    hint = f"the test text is tokenized with the tokenizer saved there: call tokenizer.save_pretrained('{OUTPUT}')"
    if not (folder / "tokenizer_config.json").is_file():
        raise InvalidSubmission(f"{OUTPUT}/tokenizer_config.json: not found; {hint}")
    try:
        return AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
    except Exception as error:  # a broken tokenizer, whatever transformers raises
        raise InvalidSubmission(f"{OUTPUT}/: no tokenizer loads from it ({type(error).__name__}: "
                                f"{str(error)[:300]}); {hint}") from None


def _check_tokenizer(tokenizer, reference_folder: pathlib.Path, lines: list[str]) -> None:
    """The saved tokenizer must split the test text into the same tokens as the task's gpt2/
    tokenizer. Perplexity is per token: a tokenizer with longer or fewer tokens changes what is
    counted and can lower the number without a better model. The original benchmark scored with
    whatever tokenizer was saved; we refuse a different one (docs/fidelity.md)."""
    from transformers import AutoTokenizer

    reference = AutoTokenizer.from_pretrained(reference_folder, trust_remote_code=False)
    for number, line in enumerate(lines, 1):
        if line and tokenizer(line)["input_ids"] != reference(line)["input_ids"]:
            raise InvalidSubmission(f"{OUTPUT}/: the tokenizer saved there splits the test text differently from "
                                    f"the task's tokenizer in gpt2/ (first on test line {number}); perplexities over "
                                    f"different tokens do not compare: train with, and save, the gpt2/ tokenizer")


def _check_fits(config, model, blocks: list[list[int]], block_size: int) -> None:
    """The model must take blocks of ``block_size`` and predict every token id in them."""
    if not blocks:
        raise InvalidSubmission(f"{OUTPUT}/: the tokenizer saved there cuts the test text into no block of "
                                f"{block_size} tokens")
    positions = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if positions is not None and positions < block_size:
        raise InvalidSubmission(f"{OUTPUT}/: the model accepts {positions} positions, but the tokenizer saved there "
                                f"makes blocks of {block_size} tokens (its model_max_length, at most 1,024)")
    embeddings = model.get_output_embeddings()
    vocab = embeddings.weight.shape[0] if embeddings is not None else getattr(config, "vocab_size", 0)
    largest = max(max(block) for block in blocks)
    if largest >= vocab:
        raise InvalidSubmission(f"{OUTPUT}/: the tokenizer saved there gives token id {largest}, but the model "
                                f"predicts only {vocab} token types; build it with vocab_size=len(tokenizer)")


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    import torch

    workspace, answers = pathlib.Path(workspace), pathlib.Path(answers)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.type == "cpu":  # one thread keeps CPU scores reproducible
        torch.set_num_threads(1)
    config, model = _load_model(workspace / OUTPUT)
    tokenizer = _load_tokenizer(workspace / OUTPUT)
    reader = _reader()
    block_size = reader.block_size_for(tokenizer)
    if block_size < 2:
        raise InvalidSubmission(f"{OUTPUT}/: the tokenizer saved there has model_max_length {block_size}; blocks "
                                f"of fewer than 2 tokens leave no next token to predict")
    test = reader.read_split("test", root=str(answers))
    _check_tokenizer(tokenizer, answers / REFERENCE_TOKENIZER, test)
    blocks = reader.token_blocks(tokenizer, test, block_size)
    _check_fits(config, model, blocks, block_size)

    model.to(device)
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(blocks), BATCH):
            batch = torch.tensor(blocks[start:start + BATCH], device=device)
            try:
                logits = model(input_ids=batch).logits
            except Exception as error:
                raise InvalidSubmission(f"{OUTPUT}/: the model failed on a batch of test blocks: "
                                        f"{type(error).__name__}: {str(error)[:500]}") from None
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                                     batch[:, 1:].reshape(-1), reduction="sum")
            total, count = total + loss.item(), count + batch[:, 1:].numel()
    mean = total / count
    if not math.isfinite(mean):
        raise InvalidSubmission(f"{OUTPUT}/: the model's test loss is not finite ({mean}); its weights hold NaN "
                                f"or infinite values")
    return math.exp(mean)

"""Grader for the BabyLM task: perplexity of the saved model on the hidden babylm_test text.

The submission is the folder output/ with a causal language model that transformers loads with
``AutoModelForCausalLM.from_pretrained`` from safetensors weights (no pickled files and no
custom code are loaded: the folder comes from untrusted code). The test text is tokenized with
the task's own tokenizer (hidden/gpt2, a copy of the public one), each line followed by the
end-of-text token, concatenated and cut into windows of WINDOW tokens; the score is
exp(mean next-token loss) over all windows (lower is better).
"""

from __future__ import annotations

import math
import pathlib

from pytest_mlab.grading import InvalidSubmission

OUTPUT = "output"
WINDOW = 128
BATCH = 8


def _test_ids(answers: pathlib.Path, tokenizer) -> list[int]:
    ids: list[int] = []
    for path in sorted((answers / "babylm_test").glob("*.test")):
        for line in path.read_text().splitlines():
            if line.strip():
                ids.extend(tokenizer(line.strip())["input_ids"] + [tokenizer.eos_token_id])
    return ids


def _load_model(folder: pathlib.Path):
    from transformers import AutoConfig, AutoModelForCausalLM

    if not (folder / "config.json").is_file():
        raise InvalidSubmission(f"{OUTPUT}/config.json: not found; train.py must save the model with "
                                f"model.save_pretrained('{OUTPUT}')")
    if not list(folder.glob("*.safetensors")):
        raise InvalidSubmission(f"{OUTPUT}/: no .safetensors weights; save with model.save_pretrained('{OUTPUT}') "
                                f"(safe_serialization, the default); pickled weights are not loaded")
    try:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(folder, use_safetensors=True, trust_remote_code=False)
    except Exception as error:  # transformers raises many types for a broken folder
        raise InvalidSubmission(f"{OUTPUT}/: transformers cannot load a causal language model from it: "
                                f"{type(error).__name__}: {str(error)[:500]}") from None
    return config, model.eval()


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    import torch
    from transformers import AutoTokenizer

    workspace, answers = pathlib.Path(workspace), pathlib.Path(answers)
    torch.set_num_threads(1)
    tokenizer = AutoTokenizer.from_pretrained(answers / "gpt2")
    config, model = _load_model(workspace / OUTPUT)
    vocab = model.get_output_embeddings().weight.shape[0] if model.get_output_embeddings() is not None \
        else getattr(config, "vocab_size", 0)
    if vocab < len(tokenizer):
        raise InvalidSubmission(f"{OUTPUT}/: the model predicts {vocab} token types but the gpt2 tokenizer has "
                                f"{len(tokenizer)}; build the model with vocab_size=len(tokenizer)")
    positions = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if positions is not None and positions < WINDOW:
        raise InvalidSubmission(f"{OUTPUT}/: the model accepts {positions} positions; the grader scores windows "
                                f"of {WINDOW} tokens, so it needs at least {WINDOW}")

    ids = _test_ids(answers, tokenizer)
    windows = torch.tensor(ids[:len(ids) // WINDOW * WINDOW]).view(-1, WINDOW)
    total, count = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(windows), BATCH):
            batch = windows[start:start + BATCH]
            try:
                logits = model(input_ids=batch).logits
            except Exception as error:
                raise InvalidSubmission(f"{OUTPUT}/: the model failed on a batch of test windows: "
                                        f"{type(error).__name__}: {str(error)[:500]}") from None
            loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                                     batch[:, 1:].reshape(-1), reduction="sum")
            total, count = total + loss.item(), count + batch[:, 1:].numel()
    mean = total / count
    if not math.isfinite(mean):
        raise InvalidSubmission(f"{OUTPUT}/: the model's test loss is not finite ({mean}); its weights hold NaN "
                                f"or infinite values")
    return math.exp(mean)

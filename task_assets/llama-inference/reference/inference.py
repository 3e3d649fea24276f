"""Generation speed of a LLaMA model: reference solution.

Changes to the starter: generate() runs without autograd (torch.inference_mode) and uses the
model's key/value cache through ``model.generate``, so each new token costs one step over one
position instead of a pass over the whole sequence.

For the score, this file is imported in a fresh process that calls ``load_model()`` once, then
``generate(model, input_ids)`` on hidden prompts, and that process's CPU time is compared with
the original file's (see evaluation_details.txt). Keep both functions and what they return;
change how they work. ``main()`` measures the same thing on WikiText test text and prints the
average generation time per token.
"""

import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

MODEL = "llama-7b"
CONTEXT_LENGTH = 64      # prompt tokens per sequence
GENERATION_LENGTH = 32   # new tokens per sequence
BATCH_SIZE = 4
NUM_BATCHES = 2
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_model():
    """The model and its tokenizer, ready to generate."""
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForCausalLM.from_pretrained(MODEL).to(DEVICE).eval()
    return model, tokenizer


def generate(model, input_ids: torch.Tensor) -> torch.Tensor:
    """Greedy decoding: the prompts (batch, CONTEXT_LENGTH) followed by GENERATION_LENGTH new tokens."""
    input_ids = input_ids.to(DEVICE)
    with torch.inference_mode():
        return model.generate(input_ids, attention_mask=torch.ones_like(input_ids), do_sample=False,
                              max_new_tokens=GENERATION_LENGTH, min_new_tokens=GENERATION_LENGTH,
                              pad_token_id=model.config.eos_token_id, use_cache=True)


def prompts(tokenizer) -> list[torch.Tensor]:
    """NUM_BATCHES batches of CONTEXT_LENGTH-token windows of the WikiText test text."""
    with open("wikitext/test.txt") as handle:
        lines = [line for line in handle if line.strip()]
    ids = [token for line in lines for token in tokenizer(line)["input_ids"]]
    windows = [ids[start:start + CONTEXT_LENGTH] for start in range(0, len(ids) - CONTEXT_LENGTH, CONTEXT_LENGTH)]
    windows = windows[:NUM_BATCHES * BATCH_SIZE]
    return [torch.tensor(windows[i:i + BATCH_SIZE]) for i in range(0, len(windows), BATCH_SIZE)]


def main() -> None:
    torch.manual_seed(0)
    model, tokenizer = load_model()
    batches = prompts(tokenizer)
    total_time = 0.0
    for batch in batches:
        start = time.time()
        output = generate(model, batch)
        total_time += time.time() - start
        assert output.shape == (len(batch), CONTEXT_LENGTH + GENERATION_LENGTH)
    tokens = len(batches) * BATCH_SIZE * GENERATION_LENGTH
    print(f"Average per token generation time: {total_time / tokens:.6f} s")


if __name__ == "__main__":
    main()

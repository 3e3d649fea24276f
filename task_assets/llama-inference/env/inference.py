"""Generation speed of a LLaMA model: the script to make faster.

Running it loads the model, takes the first NUM_BATCHES batches of CONTEXT_LENGTH-token prompts
from the WikiText-103 test text, generates GENERATION_LENGTH new token per prompt, and prints the
average generation time per batch, which, with one new token for all the prompts of a batch at
once, is the time per generated token.

For the score, the harness imports this file, calls ``load_model()`` once, then times
``generate(model, input_ids)`` on batches of prompts of the same shape drawn at random at each
grading, against the original file (see evaluation_details.txt).
"""

import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

# ---- DO NOT EDIT: the model, the prompts and how many tokens are generated ----

MODEL = "llama-7b"
TEXT = "wikitext/test.txt"
GENERATION_LENGTH = 1    # new tokens per prompt
CONTEXT_LENGTH = 128     # prompt tokens; shorter lines of the text are skipped
BATCH_SIZE = 4
NUM_BATCHES = 100
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if DEVICE.type == "cpu":
    torch.set_num_threads(1)  # as the harness times it on a CPU; more threads contend on a shared machine


def prompts(tokenizer) -> list[torch.Tensor]:
    """The first NUM_BATCHES batches of prompts: every line of the text, tokenized and cut at
    CONTEXT_LENGTH tokens, is kept if it reaches CONTEXT_LENGTH tokens."""
    with open(TEXT) as handle:
        lines = handle.readlines()
    ids = tokenizer(lines, truncation=True, max_length=CONTEXT_LENGTH)["input_ids"]
    kept = [row for row in ids if len(row) == CONTEXT_LENGTH][:NUM_BATCHES * BATCH_SIZE]
    return [torch.tensor(kept[start:start + BATCH_SIZE]) for start in range(0, len(kept), BATCH_SIZE)]


# ---- end of DO NOT EDIT ----


def load_model():
    """The model and its tokenizer, ready to generate."""
    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    model = AutoModelForCausalLM.from_pretrained(MODEL).to(DEVICE)
    return model, tokenizer


def generate(model, input_ids: torch.Tensor) -> torch.Tensor:
    """The prompts (batch, CONTEXT_LENGTH) followed by GENERATION_LENGTH greedily generated tokens."""
    input_ids = input_ids.to(DEVICE)
    with torch.no_grad():
        model.eval()
        return model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                              max_length=GENERATION_LENGTH + CONTEXT_LENGTH)


def main() -> None:
    model, tokenizer = load_model()
    batches = prompts(tokenizer)
    total_time = 0.0
    for batch in batches:
        start_time = time.time()
        generate(model, batch)
        total_time += time.time() - start_time
    print("Average per token generation time: ", total_time / len(batches))


if __name__ == "__main__":
    main()

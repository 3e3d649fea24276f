"""Generation speed of a LLaMA model: the script to make faster.

Running it loads the model, takes the first NUM_BATCHES batches of CONTEXT_LENGTH-token prompts
from the WikiText-103 test text, generates GENERATION_LENGTH new token per prompt, and prints the
average generation time per batch, which, with one new token for all the prompts of a batch at
once, is the time per generated token. It uses the GPU when there is one.

Files: llama-7b/ holds a LLaMA causal language model in the Hugging Face format (load it with
AutoModelForCausalLM and AutoTokenizer from "llama-7b"; there is no network, so nothing can be
downloaded); wikitext/test.txt holds the WikiText-103 test text, one row per line.

How this file is scored (what main() prints is not used):
  1. A fresh Python process, in the workspace, limited to one CPU thread (torch.set_num_threads(1)
     and one BLAS thread), imports numpy, torch and transformers, runs `import inference` (so
     main() does not run), calls `model, tokenizer = inference.load_model()` once, then
     `inference.generate(model, input_ids)` once on each of 100 batches of prompts: LongTensors
     of shape (4, 128) on the CPU, each prompt the BOS token and 127 tokens drawn at random from
     the vocabulary anew at each grading (a batch's time does not depend on its tokens).
  2. It runs the same process with the original inference.py, and one that only starts Python
     and does the imports, three times each, interleaved, each in a fresh copy of the workspace
     (always three rounds). Without a GPU the harness counts each process's CPU time from
     outside it (its threads and child processes included); with a GPU its clock times each
     process from start to end (outputs must reach the CPU before it ends). Loading the model
     counts either way. The score is
         (fastest with your file - fastest start-up) / (fastest with the original - fastest start-up),
     lower is better and 1.0 is the original's speed; work under 0.01 s of CPU counts as
     0.01 s. A file whose first timed process takes more than four times the original's time,
     or does not end within four times the original's wall-clock time plus 10 s, is stopped,
     not timed again, and scores 4.0.
  3. generate must return token ids of shape (batch, 128 + 1): the prompt unchanged, then the
     greedy next token. In every run at least 90% of the new tokens must equal the greedy
     continuation the original generates for the same prompts. Keep the names load_model and
     generate and their arguments, the part marked DO NOT EDIT and the final print of main();
     load_model must load llama-7b/ and may prepare the model further for generate. Extra
     packages cannot be installed. If importing this file, load_model() or generate() raises,
     returns the wrong shape or changes the text, the submission is invalid and says why.
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

"""Baseline for the BabyLM task: train a standard GPT-2 from scratch on babylm_10M (CUDA or CPU).

The model is built from the configuration in gpt2/ with random weights; the text is read with
babyLM_for_hf.py and tokenized with the tokenizer in gpt2/, in blocks of the tokenizer's maximum
length (at most 1,024 tokens). Training follows Hugging Face's run_clm example with its Trainer
defaults: 1 epoch, batch 16, AdamW at 5e-5 decaying linearly to 0 without warm-up, gradients
clipped at norm 1, seed 42. Every 20% of the steps, and at the end, it prints the loss,
next-token accuracy and perplexity on the first 200 dev blocks. The model and tokenizer are
saved to output/: the submission, scored by its perplexity on the hidden test split (lower is
better).

The data (the strict-small track: about 10 million words of English, roughly what a child hears
by the age of 13, from ten sources: aochildes, bnc_spoken, cbt, children_stories, gutenberg,
open_subtitles, qed, simple_wikipedia, switchboard and wikipedia):
  babylm_data/babylm_10M/<source>.train  training text, one utterance or sentence per line
  babylm_data/babylm_dev/<source>.dev    held-out text of the same sources, for validation
  gpt2/                                  GPT-2's configuration and tokenizer, no weights
                                         (AutoConfig/AutoTokenizer.from_pretrained("gpt2"));
                                         there is no network, so nothing can be downloaded
The test split is hidden. No pretrained weights may be used: train from scratch on this data.

How output/ is scored: it must hold a causal language model that transformers loads with
AutoModelForCausalLM.from_pretrained("output") (config.json and safetensors weights, as
model.save_pretrained writes; pickled weights and models that need custom code are not loaded)
and the tokenizer it was trained with (tokenizer.save_pretrained). The grader, with its own copy
of babyLM_for_hf.py, reads the test lines of the ten sources as they are; that tokenizer
tokenizes them 1,000 lines at a time, each group's tokens are joined and cut into blocks of the
tokenizer's model_max_length tokens, at most 1,024 (each group's shorter last piece dropped),
and the score is exp(mean next-token cross-entropy) over all blocks. So the model must accept
blocks of that length and predict every token id the tokenizer gives; a missing or unloadable
model or tokenizer, too few positions or output classes, or NaN losses make it invalid.
"""

import math

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, get_linear_schedule_with_warmup

from babyLM_for_hf import block_size_for, read_split, token_blocks

SEED = 42
EPOCHS = 1
BATCH_SIZE = 16
EVAL_BATCH_SIZE = 8
LEARNING_RATE = 5e-5
MAX_GRAD_NORM = 1.0
EVAL_EVERY = 0.2  # a share of all training steps
EVAL_BLOCKS = 200
OUTPUT_DIR = "output"
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # one thread keeps CPU runs reproducible
    torch.set_num_threads(1)


def evaluate(model, blocks: torch.Tensor) -> dict:
    """Mean next-token loss, accuracy and perplexity over ``blocks``."""
    model.eval()
    loss_sum, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for start in range(0, len(blocks), EVAL_BATCH_SIZE):
            batch = blocks[start:start + EVAL_BATCH_SIZE].to(DEVICE)
            output = model(input_ids=batch, labels=batch)
            predicted = batch[:, 1:].numel()
            loss_sum += output.loss.item() * predicted
            correct += (output.logits[:, :-1].argmax(-1) == batch[:, 1:]).sum().item()
            count += predicted
    model.train()
    loss = loss_sum / count
    return {"loss": round(loss, 4), "accuracy": round(correct / count, 4), "perplexity": round(math.exp(loss), 2)}


def main() -> None:
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    config = AutoConfig.from_pretrained("gpt2")
    model = AutoModelForCausalLM.from_config(config)
    if len(tokenizer) > model.get_input_embeddings().weight.shape[0]:
        model.resize_token_embeddings(len(tokenizer))
    model.to(DEVICE)
    print(f"GPT-2 with {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, random weights")

    block_size = block_size_for(tokenizer)
    train = torch.tensor(token_blocks(tokenizer, read_split("train"), block_size))
    dev = torch.tensor(token_blocks(tokenizer, read_split("validation"), block_size)[:EVAL_BLOCKS])
    print(f"{len(train)} training blocks and {len(dev)} dev blocks of {block_size} tokens")

    steps = EPOCHS * math.ceil(len(train) / BATCH_SIZE)
    eval_every = math.ceil(steps * EVAL_EVERY)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.999), eps=1e-8,
                                  weight_decay=0.0)
    schedule = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=0, num_training_steps=steps)
    generator = torch.Generator().manual_seed(SEED)
    model.train()
    step = 0
    for epoch in range(EPOCHS):
        order = torch.randperm(len(train), generator=generator)
        for start in range(0, len(order), BATCH_SIZE):
            batch = train[order[start:start + BATCH_SIZE]].to(DEVICE)
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_GRAD_NORM)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            step += 1
            if step % eval_every == 0:
                print(f"step {step}/{steps}: train loss {loss.item():.4f}, dev {evaluate(model, dev)}")

    print(f"final dev {evaluate(model, dev)}")
    model.save_pretrained(OUTPUT_DIR)
    tokenizer.save_pretrained(OUTPUT_DIR)
    print(f"Saved the model and tokenizer to {OUTPUT_DIR}/")


if __name__ == "__main__":
    main()

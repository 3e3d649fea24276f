"""Reference solution for the BabyLM task: the starter, trained properly.

Changes to the starter: four epochs instead of one and a learning rate of 1e-3 with linear
warm-up and decay.

Reads the babylm_10M training text, tokenizes it with the tokenizer in gpt2/, trains a GPT-2
model from random weights for a short while, prints the perplexity on babylm_dev, and saves the
model and tokenizer to output/ (the submission; the grader computes the test perplexity).
"""

import glob
import math

import torch
from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup

SEED = 0
BLOCK_SIZE = 64
BATCH_SIZE = 16
EPOCHS = 4
LEARNING_RATE = 1e-3
OUTPUT_DIR = "output"
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # one thread keeps CPU runs reproducible
    torch.set_num_threads(1)


def token_blocks(tokenizer, pattern: str) -> torch.Tensor:
    """All lines of the files matching ``pattern``, each ending with end-of-text, cut in blocks."""
    ids = []
    for path in sorted(glob.glob(pattern)):
        with open(path) as handle:
            for line in handle:
                if line.strip():
                    ids.extend(tokenizer(line.strip())["input_ids"] + [tokenizer.eos_token_id])
    usable = len(ids) // BLOCK_SIZE * BLOCK_SIZE
    return torch.tensor(ids[:usable]).view(-1, BLOCK_SIZE).to(DEVICE)


def perplexity(model, blocks: torch.Tensor) -> float:
    model.eval()
    losses = []
    with torch.no_grad():
        for start in range(0, len(blocks), BATCH_SIZE):
            batch = blocks[start:start + BATCH_SIZE]
            losses.append(model(batch, labels=batch).loss.item() * len(batch))
    return math.exp(sum(losses) / len(blocks))


def main() -> None:
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    train = token_blocks(tokenizer, "babylm_data/babylm_10M/*.train")
    dev = token_blocks(tokenizer, "babylm_data/babylm_dev/*.dev")
    print(f"{train.numel()} training tokens, {dev.numel()} dev tokens")

    config = GPT2Config(vocab_size=len(tokenizer), n_positions=128, n_embd=64, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    model = GPT2LMHeadModel(config).to(DEVICE)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)
    steps = EPOCHS * -(-len(train) // BATCH_SIZE)
    schedule = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=steps // 10, num_training_steps=steps)
    generator = torch.Generator().manual_seed(SEED)
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(train), generator=generator)
        for start in range(0, len(order), BATCH_SIZE):
            batch = train[order[start:start + BATCH_SIZE]]
            optimizer.zero_grad()
            model(batch, labels=batch).loss.backward()
            optimizer.step()
            schedule.step()
        print(f"epoch {epoch + 1}/{EPOCHS}: dev perplexity {perplexity(model, dev):.2f}")

    model.save_pretrained(OUTPUT_DIR)
    tokenizer.save_pretrained(OUTPUT_DIR)
    print(f"Saved the model to {OUTPUT_DIR}/")


if __name__ == "__main__":
    main()

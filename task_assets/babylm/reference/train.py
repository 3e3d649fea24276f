"""Reference solution for the BabyLM task: the starter, trained harder.

Changes to the starter: a learning rate of 5e-3 (not 5e-5) with a linear warm-up over the first
10% of the steps, and 2 epochs instead of 1. Everything else is the starter's: a standard GPT-2
from the configuration in gpt2/, random weights, blocks of the tokenizer's maximum length (at
most 1,024 tokens), batch 16, gradients clipped at norm 1, seed 42, dev reports every 20% of the
steps, and the model and tokenizer saved to output/.
"""

import math

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, get_linear_schedule_with_warmup

from babyLM_for_hf import block_size_for, read_split, token_blocks

SEED = 42
EPOCHS = 2
BATCH_SIZE = 16
EVAL_BATCH_SIZE = 8
LEARNING_RATE = 5e-3
WARMUP = 0.1  # a share of all training steps
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
    schedule = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=math.ceil(steps * WARMUP),
                                               num_training_steps=steps)
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

"""Baseline for the cifar10 task: a LeNet-style CNN trained briefly with SGD (PyTorch, CUDA or CPU).

Reads the CIFAR-10 python batches from data/cifar-10-batches-py/, trains on every training image,
prints the training accuracy after each epoch and writes per-class probabilities for every image
of test_batch to submission.csv (columns id, 0, 1, ..., 9; id = row of test_batch).
"""

import pickle

import numpy as np
import pandas as pd
import torch
from torch import nn

SEED = 0
EPOCHS = 5
BATCH_SIZE = 128
LEARNING_RATE = 0.1
EVAL_BATCH_SIZE = 1024  # only bounds memory when predicting; no effect on the numbers
DATA = "data/cifar-10-batches-py"
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # reproducible CPU runs; under CUDA, deterministic mode makes some ops raise
    torch.set_num_threads(1)  # one thread: a second only contends on a small, shared machine
    torch.use_deterministic_algorithms(True)


def load_batch(name: str) -> dict:
    with open(f"{DATA}/{name}", "rb") as handle:
        return pickle.load(handle, encoding="bytes")


def to_tensor(data: np.ndarray) -> torch.Tensor:
    """uint8 (N, 3072) channel-major rows -> float (N, 3, 32, 32) on DEVICE, normalised to about [-1, 1]."""
    images = torch.from_numpy(np.asarray(data, dtype=np.float32).reshape(-1, 3, 32, 32)).to(DEVICE)
    return (images / 255.0 - 0.5) / 0.5


class Net(nn.Module):
    def __init__(self, num_classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 6, 5), nn.ReLU(), nn.MaxPool2d(2),   # 6 x 14 x 14
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),  # 16 x 5 x 5
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def predict(model: nn.Module, images: torch.Tensor) -> torch.Tensor:
    """Class probabilities, computed in evaluation mode a slice at a time."""
    model.eval()
    with torch.no_grad():
        return torch.cat([torch.softmax(model(images[start:start + EVAL_BATCH_SIZE]), dim=1)
                          for start in range(0, len(images), EVAL_BATCH_SIZE)])


def main() -> None:
    meta = load_batch("batches.meta")
    num_classes = len(meta[b"label_names"])
    batches = [load_batch(f"data_batch_{i}") for i in range(1, 6)]
    images = to_tensor(np.concatenate([b[b"data"] for b in batches]))
    labels = torch.tensor(np.concatenate([b[b"labels"] for b in batches]), dtype=torch.long, device=DEVICE)
    test = load_batch("test_batch")

    generator = torch.Generator().manual_seed(SEED)
    model = Net(num_classes).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    full_batches = len(labels) // BATCH_SIZE  # the last, partial batch of each epoch is dropped
    for epoch in range(EPOCHS):
        model.train()
        shuffled = torch.randperm(len(labels), generator=generator).to(DEVICE)
        total = 0.0
        for step in range(full_batches):
            batch = shuffled[step * BATCH_SIZE:(step + 1) * BATCH_SIZE]
            optimizer.zero_grad()
            loss = loss_fn(model(images[batch]), labels[batch])
            loss.backward()
            optimizer.step()
            total += loss.item()
        train_acc = (predict(model, images).argmax(dim=1) == labels).float().mean().item()
        print(f"epoch {epoch + 1}/{EPOCHS}: train loss {total / full_batches:.4f}, "
              f"train accuracy {train_acc:.4f}")

    probabilities = predict(model, to_tensor(test[b"data"])).cpu().numpy()
    submission = pd.DataFrame(probabilities, columns=[str(c) for c in range(num_classes)])
    submission.insert(0, "id", np.arange(len(submission)))
    submission.to_csv("submission.csv", index=False)
    print(f"Train accuracy: {train_acc:.4f}")
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

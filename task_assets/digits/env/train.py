"""Baseline for the digits task: a small convolutional network on 8x8 digit images (CUDA or CPU).

Trains on most of train.npz, prints the accuracy on a held-out validation part, then writes
class probabilities for every image in test.npz to submission.csv (columns id, 0, 1, ..., 9).
"""

import numpy as np
import pandas as pd
import torch
from torch import nn

SEED = 0
EPOCHS = 3
BATCH_SIZE = 64
LEARNING_RATE = 1e-3
VALID_FRACTION = 0.1
NUM_CLASSES = 10
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # reproducible CPU runs; under CUDA, deterministic mode makes some ops raise
    torch.set_num_threads(1)  # one thread: a second only contends on a small, shared machine
    torch.use_deterministic_algorithms(True)


def to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 (N, 8, 8) with values 0..16 -> float (N, 1, 8, 8) in [0, 1], on DEVICE."""
    return torch.from_numpy(images.astype(np.float32) / 16.0).unsqueeze(1).to(DEVICE)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),   # 16 x 4 x 4
            nn.Conv2d(16, 32, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # 32 x 2 x 2
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, NUM_CLASSES),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


def accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return (model(images).argmax(dim=1) == labels).float().mean().item()


def main() -> None:
    train = np.load("train.npz")
    test = np.load("test.npz")
    images, labels = to_tensor(train["images"]), torch.from_numpy(train["labels"]).to(DEVICE)

    generator = torch.Generator().manual_seed(SEED)
    order = torch.randperm(len(labels), generator=generator)
    n_valid = int(VALID_FRACTION * len(labels))
    valid_idx, fit_idx = order[:n_valid], order[n_valid:]

    model = Net().to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(EPOCHS):
        model.train()
        shuffled = fit_idx[torch.randperm(len(fit_idx), generator=generator)]
        total = 0.0
        for start in range(0, len(shuffled), BATCH_SIZE):
            batch = shuffled[start:start + BATCH_SIZE]
            optimizer.zero_grad()
            loss = loss_fn(model(images[batch]), labels[batch])
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)
        valid_acc = accuracy(model, images[valid_idx], labels[valid_idx])
        print(f"epoch {epoch + 1}/{EPOCHS}: train loss {total / len(fit_idx):.4f}, "
              f"validation accuracy {valid_acc:.4f}")

    model.eval()
    with torch.no_grad():
        probabilities = torch.softmax(model(to_tensor(test["images"])), dim=1).cpu().numpy()
    submission = pd.DataFrame(probabilities, columns=[str(c) for c in range(NUM_CLASSES)])
    submission.insert(0, "id", test["ids"])
    submission.to_csv("submission.csv", index=False)
    print(f"Validation accuracy: {valid_acc:.4f}")
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

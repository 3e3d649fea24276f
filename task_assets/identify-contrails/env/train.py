"""Baseline for the identify-contrails task: a small fully convolutional network (PyTorch, CUDA or CPU).

Builds an "ash" false-colour image of the labelled frame of each record from bands 11, 14 and
15, trains on 90% of train/ (the other 10% for the Dice score printed), predicts a contrail mask for every
record in test/ and writes submission.csv (record_id, encoded_pixels in the competition's
run-length encoding).
"""

import pathlib

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split
from torch import nn

SEED = 0
EPOCHS = 3
BATCH_SIZE = 8
LEARNING_RATE = 1e-2
VALID_FRACTION = 0.1  # of train/, held out for validation
N_TIMES_BEFORE = 4  # the labelled frame
THRESHOLD = 0.5
POS_WEIGHT = 5.0  # contrail pixels are rare: weight them up in the loss
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # reproducible CPU runs; under CUDA, deterministic mode makes some ops raise
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)


def normalize(band: np.ndarray, low: float, high: float) -> np.ndarray:
    return (band - low) / (high - low)


def ash_image(record: pathlib.Path) -> np.ndarray:
    """(3, H, W) float32 false colour of the labelled frame, as in the competition's notebooks."""
    band = {b: np.load(record / f"band_{b}.npy")[:, :, N_TIMES_BEFORE] for b in (11, 14, 15)}
    red = normalize(band[15] - band[14], -4, 2)
    green = normalize(band[14] - band[11], -4, 5)
    blue = normalize(band[14], 243, 303)
    return np.clip(np.stack([red, green, blue]), 0, 1).astype(np.float32)


def records_in(split: str) -> list:
    return sorted(p for p in pathlib.Path(split).iterdir() if p.is_dir())


def load(records: list, with_masks: bool):
    images = torch.from_numpy(np.stack([ash_image(r) for r in records])).to(DEVICE)
    masks = None
    if with_masks:
        masks = torch.from_numpy(np.stack([np.load(r / "human_pixel_masks.npy")[:, :, 0] for r in records]))
        masks = masks.float().unsqueeze(1).to(DEVICE)
    return [r.name for r in records], images, masks


def dice(predicted: torch.Tensor, target: torch.Tensor) -> float:
    total = predicted.sum() + target.sum()
    return 1.0 if total == 0 else (2 * (predicted * target).sum() / total).item()


def rle_encode(mask: np.ndarray) -> str:
    """1-based 'start length' pairs, pixels numbered top to bottom then left to right; '-' if empty."""
    pixels = np.concatenate([[0], mask.T.flatten() > 0, [0]])
    runs = np.flatnonzero(pixels[1:] != pixels[:-1]) + 1
    runs[1::2] -= runs[::2]
    return " ".join(str(x) for x in runs) if len(runs) else "-"


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
        nn.Conv2d(16, 1, 1),
    )


def main() -> None:
    fit_records, valid_records = train_test_split(records_in("train"), test_size=VALID_FRACTION, random_state=42)
    _, train_x, train_y = load(fit_records, True)
    _, valid_x, valid_y = load(valid_records, True)
    test_ids, test_x, _ = load(records_in("test"), False)

    model = make_model().to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.BCEWithLogitsLoss(pos_weight=torch.tensor(POS_WEIGHT, device=DEVICE))
    generator = torch.Generator().manual_seed(SEED)
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(len(train_x), generator=generator)
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            optimizer.zero_grad()
            loss = loss_fn(model(train_x[batch]), train_y[batch])
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            valid_dice = dice((torch.sigmoid(model(valid_x)) > THRESHOLD).float(), valid_y)
        print(f"epoch {epoch + 1}/{EPOCHS}: train loss {loss.item():.4f}, validation Dice {valid_dice:.4f}")

    with torch.no_grad():
        masks = (torch.sigmoid(model(test_x)) > THRESHOLD).squeeze(1).cpu().numpy()
    pd.DataFrame({"record_id": test_ids, "encoded_pixels": [rle_encode(m) for m in masks]}).to_csv(
        "submission.csv", index=False)
    print(f"Validation Dice: {valid_dice:.4f}")
    print(f"Wrote submission.csv with {len(test_ids)} rows")


if __name__ == "__main__":
    main()

"""Starter for the identify-contrails task: a single 1x1 convolution (PyTorch, CUDA or CPU).

Builds the "ash" false-colour image of each record's labelled frame from bands 11, 14 and 15,
trains on 90% of train/ (the other 10% give the validation Dice printed), predicts a contrail
mask for every record in test/ and writes submission.csv: sample_submission.csv with each
record's mask run-length encoded by encode.py.
"""

import os

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from sklearn.model_selection import train_test_split
from torch import nn
from torch.utils.data import DataLoader, Dataset

from encode import list_to_string, rle_encode

SEED = 0
EPOCHS = 1
BATCH_SIZE = 8
LEARNING_RATE = 1e-5
VALID_FRACTION = 0.1  # of train/, held out for validation
N_TIMES_BEFORE = 4  # frames before the labelled one
PADDING = 2  # pixels of reflection added on each side, cropped off the model's output
CLASS_WEIGHTS = [0.57, 4.17]  # background, contrail: contrail pixels are rare
SMOOTH = 1e-6
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # reproducible CPU runs; under CUDA, deterministic mode makes some ops raise
    torch.set_num_threads(1)  # one thread: a second only contends on a small, shared machine
    torch.use_deterministic_algorithms(True)


def false_color(band11: np.ndarray, band14: np.ndarray, band15: np.ndarray) -> np.ndarray:
    """(H, W, 3) "ash" colours in [0, 1]: red 12.3-11.2 um, green 11.2-8.4 um, blue 11.2 um."""
    def scale(band, low, high):
        return (band - low) / (high - low)

    red = scale(band15 - band14, -4, 2)
    green = scale(band14 - band11, -4, 5)
    blue = scale(band14, 243, 303)
    return np.clip(np.stack([red, green, blue], axis=2), 0, 1)


class ContrailRecords(Dataset):
    """One record per item: its padded false-colour image and its mask (zeros where there is none)."""

    def __init__(self, folder: str, ids: list):
        self.folder, self.ids = folder, ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index: int):
        record = os.path.join(self.folder, self.ids[index])
        bands = [np.load(os.path.join(record, f"band_{b}.npy"))[..., N_TIMES_BEFORE] for b in (11, 14, 15)]
        image = torch.tensor(false_color(*bands), dtype=torch.float32).permute(2, 0, 1)
        image = F.pad(image, (PADDING,) * 4, mode="reflect")
        mask_file = os.path.join(record, "human_pixel_masks.npy")
        if os.path.exists(mask_file):
            mask = torch.tensor(np.load(mask_file), dtype=torch.int64).permute(2, 0, 1)
        else:
            mask = torch.zeros((1, image.shape[1] - 2 * PADDING, image.shape[2] - 2 * PADDING), dtype=torch.int64)
        return image, mask


def crop(logits: torch.Tensor) -> torch.Tensor:
    return logits[:, :, PADDING:-PADDING, PADDING:-PADDING]


def dice_score(logits: torch.Tensor, masks: torch.Tensor) -> float:
    """Mean over the batch of each record's Dice; a record with no contrail predicted and none true scores 1."""
    predicted = crop(logits).argmax(dim=1, keepdim=True)
    overlap = (predicted * masks).sum(dim=(2, 3))
    total = predicted.sum(dim=(2, 3)) + masks.sum(dim=(2, 3))
    return ((2 * overlap + SMOOTH) / (total + SMOOTH)).mean().item()


def ce_loss(logits: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    weight = torch.tensor(CLASS_WEIGHTS, device=masks.device)
    return F.cross_entropy(crop(logits), masks.squeeze(1), weight=weight)


def main() -> None:
    ids_train, ids_valid = train_test_split(sorted(os.listdir("train")), test_size=VALID_FRACTION, random_state=42)
    print(f"TrainSize: {len(ids_train)}, ValidSize: {len(ids_valid)}")
    generator = torch.Generator().manual_seed(SEED)
    train_loader = DataLoader(ContrailRecords("train", ids_train), BATCH_SIZE, shuffle=True, generator=generator)
    valid_loader = DataLoader(ContrailRecords("train", ids_valid), 1)

    model = nn.Conv2d(3, 2, 1).to(DEVICE)  # TODO: a better model
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)

    best_dice = 0.0
    for epoch in range(EPOCHS):
        model.train()
        total_loss, total_dice = 0.0, 0.0
        for images, masks in train_loader:
            images, masks = images.to(DEVICE), masks.to(DEVICE)
            logits = model(images)
            loss = ce_loss(logits, masks)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            total_loss += loss.item()
            total_dice += dice_score(logits, masks)
        model.eval()
        with torch.no_grad():
            valid_dice = np.mean([dice_score(model(x.to(DEVICE)), y.to(DEVICE)) for x, y in valid_loader])
        print(f"epoch {epoch + 1}/{EPOCHS}: train loss {total_loss / len(train_loader):.4f}, "
              f"train Dice {total_dice / len(train_loader):.4f}, validation Dice {valid_dice:.4f}")
        if valid_dice > best_dice:
            best_dice = valid_dice
            torch.save(model.state_dict(), "u-net.pth")
            print("current model saved!")
    print(f"Validation Dice Score: {valid_dice:.4f}")

    submission = pd.read_csv("sample_submission.csv", dtype={"record_id": str}).set_index("record_id")
    test_records = ContrailRecords("test", sorted(os.listdir("test")))
    with torch.no_grad():
        for record_id, (image, _) in zip(test_records.ids, test_records):
            predicted = crop(model(image.unsqueeze(0).to(DEVICE))).argmax(dim=1)[0].cpu().numpy()
            submission.loc[record_id, "encoded_pixels"] = list_to_string(rle_encode(predicted))
    submission.to_csv("submission.csv")
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

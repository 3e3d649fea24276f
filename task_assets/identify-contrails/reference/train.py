"""Improved solution for the identify-contrails task: a small convolutional network trained on
crops around the contrails (PyTorch, CUDA or CPU).

Compared with the starter: three 3x3 convolutions with batch normalisation and growing dilation
(a 15-pixel view, enough to tell a thin streak from a broad cirrus patch) instead of one 1x1
convolution; learning rate 3e-3 instead of 1e-5; 150 steps on 48x48 crops, half of them centred
on a contrail pixel, instead of one epoch of whole images; and a stricter reading of the output:
a pixel is a contrail when its probability exceeds 0.9, and a mask of fewer than 50 pixels is
dropped, because a record without contrails scores 1 only when nothing at all is predicted.

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

from encode import list_to_string, rle_encode

SEED = 0
STEPS = 150
BATCH_SIZE = 16
CROP = 48
LEARNING_RATE = 3e-3
VALID_FRACTION = 0.1  # of train/, held out for validation
N_TIMES_BEFORE = 4  # frames before the labelled one
CLASS_WEIGHTS = [1.0, 3.0]  # background, contrail
WIDTH = 16
THRESHOLD = 0.9  # contrail probability above which a pixel is marked
MIN_PIXELS = 50  # smaller masks are dropped: an empty record scores 1 only with an empty prediction
SMOOTH = 1e-6
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # reproducible CPU runs; under CUDA, deterministic mode makes some ops raise
    torch.set_num_threads(1)  # one thread: a second only contends on a small, shared machine
    torch.use_deterministic_algorithms(True)


def false_color(band11: np.ndarray, band14: np.ndarray, band15: np.ndarray) -> np.ndarray:
    """(3, H, W) "ash" colours in [0, 1]: red 12.3-11.2 um, green 11.2-8.4 um, blue 11.2 um."""
    def scale(band, low, high):
        return (band - low) / (high - low)

    red = scale(band15 - band14, -4, 2)
    green = scale(band14 - band11, -4, 5)
    blue = scale(band14, 243, 303)
    return np.clip(np.stack([red, green, blue]), 0, 1).astype(np.float32)


def load(folder: str, ids: list, with_masks: bool):
    """Images (N, 3, H, W) and 0/1 masks (N, H, W) of the listed records, on DEVICE."""
    images, masks = [], []
    for record_id in ids:
        record = os.path.join(folder, record_id)
        images.append(false_color(*[np.load(os.path.join(record, f"band_{b}.npy"))[..., N_TIMES_BEFORE]
                                    for b in (11, 14, 15)]))
        if with_masks:
            masks.append(np.load(os.path.join(record, "human_pixel_masks.npy"))[..., 0])
    images = torch.from_numpy(np.stack(images)).to(DEVICE)
    return images, torch.from_numpy(np.stack(masks).astype(np.uint8)).to(DEVICE) if with_masks else None


def make_model() -> nn.Module:
    layers, channels = [], 3
    for dilation in (1, 2, 4):
        layers += [nn.Conv2d(channels, WIDTH, 3, padding=dilation, dilation=dilation), nn.BatchNorm2d(WIDTH), nn.ReLU()]
        channels = WIDTH
    return nn.Sequential(*layers, nn.Conv2d(WIDTH, 2, 1))


def crops(images: torch.Tensor, masks: torch.Tensor, generator: torch.Generator):
    """A batch of CROP x CROP crops; every other one is centred on a contrail pixel when its record has one."""
    side = images.shape[-1]
    xs, ys = [], []
    for k in range(BATCH_SIZE):
        i = int(torch.randint(len(images), (1,), generator=generator))
        contrail = torch.nonzero(masks[i]).cpu()
        if k % 2 == 0 and len(contrail):
            row, col = contrail[int(torch.randint(len(contrail), (1,), generator=generator))].tolist()
            top, left = (min(max(c - CROP // 2, 0), side - CROP) for c in (row, col))
        else:
            top, left = torch.randint(side - CROP + 1, (2,), generator=generator).tolist()
        xs.append(images[i, :, top:top + CROP, left:left + CROP])
        ys.append(masks[i, top:top + CROP, left:left + CROP])
    return torch.stack(xs), torch.stack(ys).long()


def predict(model: nn.Module, images: torch.Tensor) -> np.ndarray:
    """(N, H, W) 0/1 masks, one record at a time."""
    model.eval()
    with torch.no_grad():
        masks = [(torch.softmax(model(image[None]), dim=1)[0, 1] > THRESHOLD).cpu().numpy() for image in images]
    return np.stack([m if m.sum() >= MIN_PIXELS else np.zeros_like(m) for m in masks]).astype(np.int64)


def dice_score(predicted: np.ndarray, masks: np.ndarray) -> float:
    """Mean over records of each record's Dice; a record with no contrail predicted and none true scores 1."""
    overlap = (predicted * masks).sum(axis=(1, 2))
    total = predicted.sum(axis=(1, 2)) + masks.sum(axis=(1, 2))
    return float(np.mean((2 * overlap + SMOOTH) / (total + SMOOTH)))


def main() -> None:
    ids_train, ids_valid = train_test_split(sorted(os.listdir("train")), test_size=VALID_FRACTION, random_state=42)
    print(f"TrainSize: {len(ids_train)}, ValidSize: {len(ids_valid)}")
    train_x, train_y = load("train", ids_train, True)
    valid_x, valid_y = load("train", ids_valid, True)

    model = make_model().to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    weight = torch.tensor(CLASS_WEIGHTS, device=DEVICE)
    generator = torch.Generator().manual_seed(SEED)
    total_loss = 0.0
    for step in range(1, STEPS + 1):
        model.train()
        x, y = crops(train_x, train_y, generator)
        loss = F.cross_entropy(model(x), y, weight=weight)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        total_loss += loss.item()
        if step % 50 == 0:
            valid_dice = dice_score(predict(model, valid_x), valid_y.cpu().numpy())
            print(f"step {step}/{STEPS}: train loss {total_loss / 50:.4f}, validation Dice {valid_dice:.4f}")
            total_loss = 0.0
    print(f"Validation Dice Score: {valid_dice:.4f}")

    submission = pd.read_csv("sample_submission.csv", dtype={"record_id": str}).set_index("record_id")
    test_ids = sorted(os.listdir("test"))
    test_x, _ = load("test", test_ids, False)
    for record_id, mask in zip(test_ids, predict(model, test_x)):
        submission.loc[record_id, "encoded_pixels"] = list_to_string(rle_encode(mask))
    submission.to_csv("submission.csv")
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

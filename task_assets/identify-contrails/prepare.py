"""Data for the identify-contrails task, in the Kaggle competition's layout
(google-research-identify-contrails-reduce-global-warming).

public/train/<record_id>/band_08.npy .. band_16.npy   float32 (H, W, T) brightness temperatures (K)
public/train/<record_id>/human_pixel_masks.npy        int32 (H, W, 1): the label of frame 4
public/train/<record_id>/human_individual_masks.npy   int32 (H, W, 1, R): each annotator's mask
public/test/<record_id>/band_*.npy                    bands only: the competition's validation records
public/train_metadata.json, validation_metadata.json  one entry per record (validation: the test records)
public/sample_submission.csv                          record_id, encoded_pixels
hidden/answers.csv                                    record_id, encoded_pixels, height, width

``mini`` draws small scenes from the seed: smooth cloud and surface temperature fields with a few
straight, thin contrails that are colder in band 11-14 differences and show up in the labelled
frame (and drift across the other frames). ``full`` takes the competition's files from Kaggle.
Both follow the original benchmark: the competition's test set is unlabelled, so all of its
labelled validation records become the test set (masks hidden) and no validation/ folder is left.
"""

from __future__ import annotations

import json
import pathlib
import shutil

import numpy as np
import pandas as pd

COMPETITION = "google-research-identify-contrails-reduce-global-warming"
BANDS = [f"band_{b:02d}" for b in range(8, 17)]
N_TIMES_BEFORE = 4
N_TIMES = 8
SIDE = 32
MINI_RECORDS = {"train": 64, "validation": 24}  # validation records become the test set


def rle_encode(mask: np.ndarray) -> str:
    """The competition's run-length encoding: 1-based 'start length' pairs, pixels numbered
    top to bottom, then left to right (column-major); '-' for an empty mask."""
    pixels = np.concatenate([[0], np.asarray(mask).T.flatten() > 0, [0]])
    runs = np.flatnonzero(pixels[1:] != pixels[:-1]) + 1
    runs[1::2] -= runs[::2]
    return " ".join(str(x) for x in runs) if len(runs) else "-"


def _smooth(rng: np.random.Generator, cells: int) -> np.ndarray:
    coarse = rng.normal(0.0, 1.0, size=(cells, cells))
    return np.kron(coarse, np.ones((SIDE // cells, SIDE // cells)))


def _line_mask(rng: np.random.Generator, shift: float) -> np.ndarray:
    """A thin straight streak across the image (about 2 pixels wide)."""
    angle = rng.uniform(0, np.pi)
    offset = rng.uniform(-SIDE / 3, SIDE / 3) + shift
    y, x = np.mgrid[0:SIDE, 0:SIDE] - SIDE / 2
    distance = np.abs(x * np.sin(angle) - y * np.cos(angle) - offset)
    length = np.abs(x * np.cos(angle) + y * np.sin(angle)) < rng.uniform(8, SIDE / 2)
    return (distance < 1.0) & length


def _record(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Bands (H, W, T) float32, the labelled frame's mask, and 1-4 annotators' masks."""
    surface = 285.0 + 6.0 * _smooth(rng, 4) + 3.0 * _smooth(rng, 8)
    cloud = np.clip(_smooth(rng, 4) + _smooth(rng, 8) * 0.6, 0, None)
    n_lines = rng.choice([0, 1, 1, 2, 3])
    streaks = [(int(rng.integers(2**32)), rng.uniform(-1.5, 1.5)) for _ in range(n_lines)]
    frames = []
    mask = np.zeros((SIDE, SIDE), dtype=bool)
    for t in range(N_TIMES):
        contrail = np.zeros((SIDE, SIDE), dtype=bool)
        for line_seed, drift in streaks:  # the same streak in every frame, drifting sideways
            contrail |= _line_mask(np.random.default_rng(line_seed), drift * (t - N_TIMES_BEFORE))
        if t == N_TIMES_BEFORE:
            mask = contrail
        frames.append(contrail)
    bands = {}
    for i, band in enumerate(BANDS):
        stack = np.empty((SIDE, SIDE, N_TIMES), dtype=np.float32)
        for t, contrail in enumerate(frames):
            value = surface - 25.0 * cloud - 4.0 * i / len(BANDS) + rng.normal(0, 0.7, size=(SIDE, SIDE))
            # ice crystals: colder at 11 um than at 12 um, hardly visible in the water-vapour bands
            if band in ("band_14", "band_15"):
                value = value - (3.0 if band == "band_14" else 0.5) * contrail
            elif band == "band_11":
                value = value - 1.5 * contrail
            stack[:, :, t] = value
        bands[band] = stack
    annotators = [np.where(rng.random((SIDE, SIDE)) < 0.05, 0, mask) for _ in range(rng.integers(1, 5))]
    return bands, mask.astype(np.int32)[:, :, None], np.stack(annotators, axis=-1).astype(np.int32)[:, :, None, :]


def _metadata(rng: np.random.Generator, record_id: str) -> dict:
    row = float(rng.uniform(-60, 60))
    col = float(rng.uniform(-180, 180))
    return {"record_id": record_id, "projection_wkt": "PROJCS[\"unknown\"]", "row_min": row, "row_size": 2000.0,
            "col_min": col, "col_size": 2000.0, "timestamp": 1.56e9 + float(rng.integers(0, 10**7))}


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    hidden.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    ids = rng.choice(10**18, size=sum(MINI_RECORDS.values()), replace=False) + 10**18
    answers = []
    start = 0
    for split, count in MINI_RECORDS.items():
        metadata = []
        for record_id in (str(i) for i in ids[start:start + count]):
            bands, mask, individual = _record(rng)
            folder = public / ("test" if split == "validation" else split) / record_id
            folder.mkdir(parents=True)
            for band, values in bands.items():
                np.save(folder / f"{band}.npy", values)
            if split == "validation":
                answers.append(_answer(record_id, mask))
            else:
                np.save(folder / "human_pixel_masks.npy", mask)
                np.save(folder / "human_individual_masks.npy", individual)
            metadata.append(_metadata(rng, record_id))
        (public / f"{split}_metadata.json").write_text(json.dumps(metadata))
        start += count
    _write_answers(public, hidden, answers)


def _answer(record_id: str, mask: np.ndarray) -> dict:
    """A hidden answer row: the mask's encoding and the image size the grader checks runs against."""
    height, width = mask.shape[:2]
    return {"record_id": record_id, "encoded_pixels": rle_encode(mask[:, :, 0]), "height": height, "width": width}


def _write_answers(public: pathlib.Path, hidden: pathlib.Path, answers: list[dict]) -> None:
    frame = pd.DataFrame(answers, columns=["record_id", "encoded_pixels", "height", "width"])
    frame.to_csv(hidden / "answers.csv", index=False)
    frame[["record_id"]].assign(encoded_pixels="-").to_csv(public / "sample_submission.csv", index=False)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The competition's train records and both metadata files as published; every labelled
    validation record becomes a test record (bands public, masks hidden)."""
    from pytest_mlab.data.kaggle import kaggle_competition
    from pytest_mlab.errors import DataError

    source = kaggle_competition(COMPETITION, pathlib.Path(downloads))
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    hidden.mkdir(parents=True, exist_ok=True)
    for name in ("train", "validation"):
        if not (source / name).is_dir():
            raise DataError(f"{source}: folder '{name}' is missing from the competition's files")
    shutil.copytree(source / "train", public / "train", copy_function=_link_or_copy)
    for name in ("train_metadata.json", "validation_metadata.json"):
        shutil.copy2(source / name, public / name)
    records = sorted(p.name for p in (source / "validation").iterdir() if p.is_dir())
    answers = []
    for record_id in records:
        folder = source / "validation" / record_id
        (public / "test" / record_id).mkdir(parents=True)
        for band in BANDS:
            _link_or_copy(folder / f"{band}.npy", public / "test" / record_id / f"{band}.npy")
        mask = np.load(folder / "human_pixel_masks.npy")
        answers.append(_answer(record_id, mask))
    _write_answers(public, hidden, answers)


def _link_or_copy(source, dest) -> None:
    """Hard-link the (large) band files from the download folder when possible."""
    try:
        pathlib.Path(dest).hardlink_to(source)
    except OSError:
        shutil.copy2(source, dest)

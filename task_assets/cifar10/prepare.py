"""Data for the cifar10 task, in the CIFAR-10 "python version" archive layout, under data/ as
torchvision's CIFAR10(root="./data") unpacks it (the original's starter and prepare script use that root).

public/data/cifar-10-batches-py/data_batch_1 .. data_batch_5   pickled dicts: b"batch_label", b"labels"
                                                                (list of int), b"data" (uint8 N x 3072,
                                                                channel-major rows: 1024 red, 1024 green,
                                                                1024 blue), b"filenames"
public/data/cifar-10-batches-py/test_batch                      the same dict without b"labels"
public/data/cifar-10-batches-py/batches.meta                    b"label_names", b"num_cases_per_batch", b"num_vis"
hidden/answers.csv                                              id (row of test_batch), label

``mini`` draws 32x32 colour images of ten synthetic classes (a smooth class template, shifted,
recoloured and noised per image), deterministically from the seed. ``full`` downloads the real
archive (cifar-10-python.tar.gz) and only removes the test labels.
"""

from __future__ import annotations

import io
import pathlib
import pickle
import tarfile

import numpy as np
import pandas as pd

FOLDER = "cifar-10-batches-py"  # the archive's top folder, kept as is under DATA
DATA = "data"
LABEL_NAMES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
SHA256 = "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce"
SIZE = 170498071
MINI_PER_BATCH = 400
MINI_TEST = 1000
SIDE = 32


def _write_pickle(path: pathlib.Path, obj: dict) -> None:
    with open(path, "wb") as handle:
        pickle.dump(obj, handle, protocol=2)


def _smooth(rng: np.random.Generator, size: int) -> np.ndarray:
    """A random low-frequency 32x32x3 image in [-1, 1]: coarse noise upsampled bilinearly."""
    coarse = rng.uniform(-1.0, 1.0, size=(size + 1, size + 1, 3))
    grid = np.linspace(0, size, SIDE)
    low, frac = np.floor(grid).astype(int).clip(max=size - 1), grid - np.floor(grid).clip(max=size - 1)
    rows = coarse[low] * (1 - frac)[:, None, None] + coarse[low + 1] * frac[:, None, None]
    return rows[:, low] * (1 - frac)[None, :, None] + rows[:, low + 1] * frac[None, :, None]


def _images(rng: np.random.Generator, templates: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """uint8 (N, 3072) rows in CIFAR's channel-major order."""
    out = np.empty((len(labels), 3, SIDE, SIDE), dtype=np.uint8)
    for i, label in enumerate(labels):
        image = np.roll(templates[label], shift=tuple(rng.integers(-5, 6, size=2)), axis=(0, 1))
        if rng.random() < 0.5:
            image = image[:, ::-1]
        image = image * rng.uniform(0.5, 1.2) + rng.normal(0.0, 0.25, size=3) + _smooth(rng, 3) * 0.6
        image = image + rng.normal(0.0, 0.35, size=image.shape)
        out[i] = np.clip(127.5 + 80.0 * image, 0, 255).astype(np.uint8).transpose(2, 0, 1)
    return out.reshape(len(labels), -1)


def _filenames(rng: np.random.Generator, labels: np.ndarray) -> list[bytes]:
    return [f"{LABEL_NAMES[label]}_s_{rng.integers(0, 1_000_000):06d}.png".encode() for label in labels]


def _write_answers(hidden: pathlib.Path, labels) -> None:
    pd.DataFrame({"id": np.arange(len(labels)), "label": np.asarray(labels, dtype=np.int64)}).to_csv(
        hidden / "answers.csv", index=False)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    folder = pathlib.Path(public) / DATA / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    pathlib.Path(hidden).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    templates = np.stack([_smooth(rng, 4) + _smooth(rng, 8) * 0.5 for _ in LABEL_NAMES])
    for batch in range(1, 6):
        labels = rng.integers(0, len(LABEL_NAMES), size=MINI_PER_BATCH)
        _write_pickle(folder / f"data_batch_{batch}", {
            b"batch_label": f"training batch {batch} of 5".encode(), b"labels": labels.tolist(),
            b"data": _images(rng, templates, labels), b"filenames": _filenames(rng, labels)})
    labels = rng.integers(0, len(LABEL_NAMES), size=MINI_TEST)
    _write_pickle(folder / "test_batch", {
        b"batch_label": b"testing batch 1 of 1", b"data": _images(rng, templates, labels),
        b"filenames": _filenames(rng, labels)})
    _write_pickle(folder / "batches.meta", {
        b"label_names": [name.encode() for name in LABEL_NAMES], b"num_cases_per_batch": MINI_PER_BATCH,
        b"num_vis": SIDE * SIDE * 3})
    _write_answers(pathlib.Path(hidden), labels)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The real CIFAR-10: every file as published, except that test_batch loses its labels."""
    from pytest_mlab.task_api import download

    archive = download(URL, pathlib.Path(downloads) / "cifar-10-python.tar.gz", sha256=SHA256, size=SIZE)
    folder = pathlib.Path(public) / DATA / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    pathlib.Path(hidden).mkdir(parents=True, exist_ok=True)
    names = [f"data_batch_{batch}" for batch in range(1, 6)] + ["batches.meta", "test_batch"]
    with tarfile.open(archive, "r:gz") as tar:
        for name in names:
            member = tar.extractfile(f"{FOLDER}/{name}")
            if member is None:
                from pytest_mlab.task_api import DataError
                raise DataError(f"{archive}: {FOLDER}/{name} is missing from the archive")
            content = member.read()
            if name == "test_batch":
                batch = pickle.load(io.BytesIO(content), encoding="bytes")
                _write_answers(pathlib.Path(hidden), batch.pop(b"labels"))
                _write_pickle(folder / name, batch)
            else:
                (folder / name).write_bytes(content)

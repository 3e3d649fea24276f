"""Data for the fathomnet task, in the layout of the Kaggle competition
fathomnet-out-of-sample-detection (FathomNet 2023, FGVC10).

public/multilabel_classification/train.csv   id, categories ("[1.0, 9.0]": the categories present)
public/object_detection/train.json           COCO-style: images, annotations (bbox), categories
public/object_detection/eval.json            COCO-style: images only
public/category_key.csv                      id, name, supercat
public/images/<id>.png                       every training and evaluation image
public/sample_submission.csv                 id, categories, osd
hidden/answers.csv                           id, categories (space-separated), osd (1 = out of sample)

Training images come from shallow water (0-800 m). Evaluation images come from the whole water
column, so some are "out of sample": deeper, darker, and showing animals of categories that are
rare or absent in training. ``mini`` draws small synthetic scenes (animals are coloured shapes on
a depth-dependent background) from the seed. ``full`` takes the competition's files from Kaggle
(the images are fetched from the URLs in its COCO files, as its download script does); the competition's
evaluation answers are not public, so the hidden split is made from the training images.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import uuid

import numpy as np
import pandas as pd
from PIL import Image

COMPETITION = "fathomnet-out-of-sample-detection"
SIDE = 48
N_CATEGORIES = 20
SHALLOW_CATEGORIES = 15  # categories 16..20 live only deeper than 800 m
MINI_TRAIN = 400
MINI_EVAL = 160
OUT_OF_SAMPLE_FRACTION = 0.4
TEST_FRACTION = 0.2
SUPERCATS = ["Fish", "Crab", "Sea star", "Eel", "Anemone"]


def _colour(category: int) -> np.ndarray:
    """A fixed colour per category, independent of the seed."""
    hue = (category * 0.61803) % 1.0
    return 255 * np.array([0.5 + 0.5 * np.cos(2 * np.pi * (hue + k / 3)) for k in range(3)])


def _draw(rng: np.random.Generator, categories: list[int], deep: bool) -> tuple[np.ndarray, list[list[float]]]:
    """An RGB uint8 image with one shape per category, and COCO boxes [x, y, w, h]."""
    yy, xx = np.mgrid[0:SIDE, 0:SIDE]
    brightness = rng.uniform(0.15, 0.45) if deep else rng.uniform(0.4, 0.9)
    image = np.empty((SIDE, SIDE, 3))
    image[:] = np.array([20, 60, 120]) * brightness + rng.normal(0, 12, size=(SIDE, SIDE, 3))
    boxes = []
    for category in categories:
        size = rng.integers(9, 15)
        x, y = rng.integers(0, SIDE - size, size=2)
        cx, cy = x + size / 2, y + size / 2
        if category % 3 == 0:
            inside = (np.abs(xx - cx) < size / 2) & (np.abs(yy - cy) < size / 2)
        elif category % 3 == 1:
            inside = (xx - cx) ** 2 + (yy - cy) ** 2 < (size / 2) ** 2
        else:
            inside = np.abs(xx - cx) + np.abs(yy - cy) < size / 2
        image[inside] = _colour(category) * rng.uniform(0.8, 1.0) + rng.normal(0, 10, size=(int(inside.sum()), 3))
        boxes.append([float(x), float(y), float(size), float(size)])
    return np.clip(image, 0, 255).astype(np.uint8), boxes


def _categories(rng: np.random.Generator, deep: bool) -> list[int]:
    pool = np.arange(1, N_CATEGORIES + 1) if deep else np.arange(1, SHALLOW_CATEGORIES + 1)
    weights = np.where(pool > SHALLOW_CATEGORIES, 3.0, 1.0)
    count = rng.integers(1, 4)
    return sorted(int(c) for c in rng.choice(pool, size=count, replace=False, p=weights / weights.sum()))


def _coco_image(image_id: int, file_name: str) -> dict:
    return {"id": image_id, "width": SIDE, "height": SIDE, "file_name": file_name, "license": 0,
            "flickr_url": "", "coco_url": "", "date_captured": "2023-01-01 00:00:00"}


def _category_key() -> pd.DataFrame:
    return pd.DataFrame({"id": range(1, N_CATEGORIES + 1),
                         "name": [f"category_{c:02d}" for c in range(1, N_CATEGORIES + 1)],
                         "supercat": [SUPERCATS[c % len(SUPERCATS)] for c in range(1, N_CATEGORIES + 1)]})


def _write_hidden(public: pathlib.Path, hidden: pathlib.Path, answers: pd.DataFrame) -> None:
    hidden.mkdir(parents=True, exist_ok=True)
    answers.to_csv(hidden / "answers.csv", index=False)
    pd.DataFrame({"id": answers["id"], "categories": "1 2 3", "osd": 0.1}).to_csv(
        public / "sample_submission.csv", index=False)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    rng = np.random.default_rng(seed)
    for folder in ("images", "multilabel_classification", "object_detection"):
        (public / folder).mkdir(parents=True, exist_ok=True)
    categories = _category_key()
    categories.to_csv(public / "category_key.csv", index=False)
    coco_categories = [{"id": int(r.id), "name": r.name, "supercategory": r.supercat} for r in categories.itertuples()]

    train_rows, train_images, annotations, eval_images, answers = [], [], [], [], []
    for index in range(MINI_TRAIN + MINI_EVAL):
        image_id = str(uuid.UUID(bytes=rng.bytes(16), version=4))
        evaluation = index >= MINI_TRAIN
        deep = evaluation and rng.random() < OUT_OF_SAMPLE_FRACTION
        present = _categories(rng, deep)
        pixels, boxes = _draw(rng, present, deep)
        Image.fromarray(pixels).save(public / "images" / f"{image_id}.png")
        coco = _coco_image(index + 1, f"{image_id}.png")
        if evaluation:
            eval_images.append(coco)
            answers.append({"id": image_id, "categories": " ".join(map(str, present)), "osd": int(deep)})
            continue
        train_images.append(coco)
        train_rows.append({"id": image_id, "categories": str([float(c) for c in present])})
        for category, box in zip(present, boxes):
            annotations.append({"id": len(annotations) + 1, "image_id": index + 1, "category_id": category,
                                "segmentation": [], "area": box[2] * box[3], "bbox": box, "iscrowd": 0})
    pd.DataFrame(train_rows).to_csv(public / "multilabel_classification" / "train.csv", index=False)
    info = {"description": "FathomNet 2023 (mini)", "version": "1.0", "year": 2023}
    (public / "object_detection" / "train.json").write_text(json.dumps(
        {"info": info, "licenses": [], "images": train_images, "annotations": annotations, "categories": coco_categories}))
    (public / "object_detection" / "eval.json").write_text(json.dumps(
        {"info": info, "licenses": [], "images": eval_images, "annotations": [], "categories": coco_categories}))
    _write_hidden(public, hidden, pd.DataFrame(answers))


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The competition's training images and labels, with a deterministic fifth held out as the
    evaluation set (the competition's own evaluation answers are not published). All held-out
    images come from the training depth range, so every osd answer is 0 for this variant."""
    from pytest_mlab.data.kaggle import kaggle_competition
    from pytest_mlab.data.split import split_ids
    from pytest_mlab.errors import DataError

    source = kaggle_competition(COMPETITION, pathlib.Path(downloads))
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    train_csv = source / "multilabel_classification" / "train.csv"
    coco_path = source / "object_detection" / "train.json"
    for required in (train_csv, coco_path, source / "category_key.csv"):
        if not required.exists():
            raise DataError(f"{required} is missing from the competition's files")
    labels = pd.read_csv(train_csv)
    keep, test = split_ids(labels["id"].astype(str), TEST_FRACTION, seed)
    test_set = set(test.tolist())
    coco = json.loads(coco_path.read_text())
    coco_ids = {image["file_name"].rsplit(".", 1)[0]: image["id"] for image in coco["images"]}
    held_coco = {coco_ids[i] for i in test_set if i in coco_ids}
    (public / "multilabel_classification").mkdir(parents=True, exist_ok=True)
    (public / "object_detection").mkdir(parents=True, exist_ok=True)
    (public / "images").mkdir(parents=True, exist_ok=True)
    labels[~labels["id"].astype(str).isin(test_set)].to_csv(public / "multilabel_classification" / "train.csv", index=False)
    train_json = dict(coco, images=[i for i in coco["images"] if i["id"] not in held_coco],
                      annotations=[a for a in coco["annotations"] if a["image_id"] not in held_coco])
    eval_json = dict(coco, images=[i for i in coco["images"] if i["id"] in held_coco], annotations=[])
    (public / "object_detection" / "train.json").write_text(json.dumps(train_json))
    (public / "object_detection" / "eval.json").write_text(json.dumps(eval_json))
    shutil.copy2(source / "category_key.csv", public / "category_key.csv")
    for image in sorted(_images(source, pathlib.Path(downloads), coco["images"]).iterdir()):
        try:
            (public / "images" / image.name).hardlink_to(image)
        except OSError:
            shutil.copy2(image, public / "images" / image.name)
    held = labels[labels["id"].astype(str).isin(test_set)]
    answers = pd.DataFrame({"id": held["id"].astype(str),
                            "categories": [" ".join(str(int(float(c))) for c in json.loads(v)) for v in held["categories"]],
                            "osd": 0})
    _write_hidden(public, hidden, answers)


def _images(source: pathlib.Path, downloads: pathlib.Path, images: list[dict]) -> pathlib.Path:
    """The folder of training images: the competition's images/ when present, else each image
    fetched from its coco_url (what the competition's download_images.py does), resumably."""
    from pytest_mlab.data.fetch import download
    from pytest_mlab.errors import DataError

    if (source / "images").is_dir():
        return source / "images"
    folder = downloads / "fathomnet-images"
    for image in images:
        if not image.get("coco_url"):
            raise DataError(f"{source / 'object_detection' / 'train.json'}: image {image.get('id')} has no "
                            f"coco_url to download it from")
        download(image["coco_url"], folder / image["file_name"])
    return folder

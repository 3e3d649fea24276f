"""Data for the fathomnet task, in the layout of the Kaggle competition
fathomnet-out-of-sample-detection (FathomNet 2023, FGVC10), split as the original benchmark does.

public/multilabel_classification/train.csv   id, categories ("[1.0, 9.0]": the categories present)
public/object_detection/train.json           COCO: images, annotations (bbox), categories
public/object_detection/eval.json            COCO: the test images (no annotations)
public/category_key.csv                      id, name, supercat (290 categories, 20 supercategories)
public/images/<id>.png                       every training image, test images included
public/sample_submission.csv                 id, categories, osd for the test images
hidden/answers.csv                           id, categories (space-separated ids), osd (0: in sample)

The competition's own evaluation answers are not public, so the test set is cut from its training
images by the original's rule: train.csv shuffled with pandas (``random_state=42``, whatever the
seed), the first 98% kept for training in that order and the last 2% held out; eval.json lists the
held-out images. Both COCO files number their images (and train.json its annotations) from 1 again.
All test images are training images, so none is out of sample.

``mini`` draws a pool of synthetic scenes from the seed and splits it the same way. The scenes have
the real images' sizes (half 1920x1080, the rest about 716x368) and the real frequencies of the
commonest categories and of the number of categories per image; each animal is a coloured shape
of its category on a water-coloured background. ``full`` takes the competition's files from Kaggle
and fetches the training images from the URLs in its COCO file, as its download script does.
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
KEEP_FRACTION = 0.98  # the original keeps 98% of train.csv for training
SHUFFLE_STATE = 42  # and shuffles it with this fixed random_state first
N_CATEGORIES = 290
SUPERCATEGORIES = ["Worm", "Feather star", "Sea cucumber", "Squat lobster", "Fish", "Soft coral", "Urchin",
                   "Sea star", "Sea fan", "Sea pen", "Barnacle", "Eel", "Glass sponge", "Shrimp", "Black coral",
                   "Anemone", "Sea spider", "Gastropod", "Crab", "Stony coral"]
MINI_IMAGES = 160  # 2 training batches of 64 for the starter, 4 held out; 500 took 50 s of CPU and 4.4 GB
SCALE = 8  # mini scenes are drawn at 1/SCALE of their size and enlarged, which keeps the PNGs small

# Counts in the competition's 5,950 training images (object_detection/train.json).
IMAGE_SIZES = {(1920, 1080): 2929, (714, 368): 992, (720, 368): 587, (720, 366): 542, (716, 370): 159,
               (720, 369): 140, (715, 368): 116, (713, 368): 75, (715, 370): 71, (720, 367): 68,
               (1920, 1079): 59, (720, 486): 48, (714, 370): 42}
CATEGORY_IMAGES = {160: 2643, 51: 785, 119: 697, 37: 568, 52: 394, 10: 308, 88: 247, 146: 225, 125: 168,
                   1: 163, 260: 137, 133: 136, 9: 132, 214: 129, 70: 127}  # the 15 commonest categories
CATEGORIES_PER_IMAGE = {1: 4209, 2: 1022, 3: 404, 4: 160, 5: 86, 6: 40}


def _weights(counts: dict) -> tuple[list, np.ndarray]:
    keys = list(counts)
    values = np.array([counts[k] for k in keys], dtype=float)
    return keys, values / values.sum()


def _colour(category: int) -> np.ndarray:
    """A fixed colour per category, independent of the seed."""
    hue = (category * 0.61803) % 1.0
    return 255 * np.array([0.5 + 0.5 * np.cos(2 * np.pi * (hue + k / 3)) for k in range(3)])


def _scene(rng: np.random.Generator, width: int, height: int,
           categories: list[int]) -> tuple[Image.Image, list[tuple[int, list[float]]]]:
    """A width x height RGB scene with 1-4 animals per category, and their (category, COCO bbox)."""
    w, h = max(width // SCALE, 1), max(height // SCALE, 1)
    yy, xx = np.mgrid[0:h, 0:w]
    brightness = rng.uniform(0.4, 0.9)
    canvas = np.array([20.0, 60.0, 120.0]) * brightness * (1.1 - 0.4 * yy[..., None] / h)
    canvas = canvas + rng.normal(0, 10, size=(h, w, 3))
    boxes = []
    for category in categories:
        for _animal in range(int(rng.integers(1, 5))):
            size = max(int(rng.uniform(0.12, 0.25) * h), 3)
            x, y = int(rng.integers(0, max(w - size, 1))), int(rng.integers(0, max(h - size, 1)))
            cx, cy = x + size / 2, y + size / 2
            if category % 3 == 0:
                inside = (np.abs(xx - cx) < size / 2) & (np.abs(yy - cy) < size / 2)
            elif category % 3 == 1:
                inside = (xx - cx) ** 2 + (yy - cy) ** 2 < (size / 2) ** 2
            else:
                inside = np.abs(xx - cx) + np.abs(yy - cy) < size / 2
            canvas[inside] = _colour(category) * rng.uniform(0.8, 1.0) + rng.normal(0, 8, size=(int(inside.sum()), 3))
            sx, sy = width / w, height / h
            boxes.append((category, [round(x * sx, 1), round(y * sy, 1), round(size * sx, 1), round(size * sy, 1)]))
    small = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8))
    return small.resize((width, height), Image.NEAREST), boxes


def _category_key() -> pd.DataFrame:
    ids = range(1, N_CATEGORIES + 1)
    return pd.DataFrame({"id": ids, "name": [f"taxon_{c:03d}" for c in ids],
                         "supercat": [SUPERCATEGORIES[(c - 1) % len(SUPERCATEGORIES)] for c in ids]})


def _coco_categories(key: pd.DataFrame) -> list[dict]:
    return [{"id": int(r.id), "name": r.name, "supercategory": r.supercat} for r in key.itertuples()]


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    rng = np.random.default_rng(seed)
    (public / "images").mkdir(parents=True, exist_ok=True)
    key = _category_key()
    key.to_csv(public / "category_key.csv", index=False)
    sizes, size_p = _weights(IMAGE_SIZES)
    categories, category_p = _weights(CATEGORY_IMAGES)
    counts, count_p = _weights(CATEGORIES_PER_IMAGE)

    rows, images, annotations = [], [], []
    for index in range(1, MINI_IMAGES + 1):
        image_id = str(uuid.UUID(bytes=rng.bytes(16), version=4))
        width, height = sizes[rng.choice(len(sizes), p=size_p)]
        count = counts[rng.choice(len(counts), p=count_p)]
        picked = rng.choice(len(categories), size=count, replace=False, p=category_p)
        present = sorted(int(categories[i]) for i in picked)
        scene, boxes = _scene(rng, width, height, present)
        scene.save(public / "images" / f"{image_id}.png", compress_level=1)
        rows.append({"id": image_id, "categories": str([float(c) for c in present])})
        images.append({"id": index, "width": width, "height": height, "file_name": f"{image_id}.png", "license": 0,
                       "flickr_url": "", "coco_url": "", "date_captured": "2023-01-01 00:00:00"})
        annotations += [{"id": len(annotations) + 1, "image_id": index, "category_id": category, "segmentation": [],
                         "area": round(box[2] * box[3], 1), "bbox": box, "iscrowd": 0} for category, box in boxes]
    info = {"description": "FathomNet 2023 (mini)", "version": "1.0", "year": 2023}
    coco_train = {"info": info, "licenses": [], "images": images, "annotations": annotations,
                  "categories": _coco_categories(key)}
    coco_eval = {"info": info, "licenses": [], "images": [], "annotations": [], "categories": _coco_categories(key)}
    _split(public, hidden, pd.DataFrame(rows), coco_train, coco_eval)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    from pytest_mlab.task_api import DataError, kaggle_competition

    source = kaggle_competition(COMPETITION, pathlib.Path(downloads))
    public, hidden = pathlib.Path(public), pathlib.Path(hidden)
    train_csv = source / "multilabel_classification" / "train.csv"
    coco_train_path = source / "object_detection" / "train.json"
    coco_eval_path = source / "object_detection" / "eval.json"
    for required in (train_csv, coco_train_path, coco_eval_path, source / "category_key.csv"):
        if not required.exists():
            raise DataError(f"{required} is missing from the competition's files")
    coco_train = json.loads(coco_train_path.read_text())
    (public / "images").mkdir(parents=True, exist_ok=True)
    shutil.copy2(source / "category_key.csv", public / "category_key.csv")
    for image in sorted(_images(source, pathlib.Path(downloads), coco_train["images"]).iterdir()):
        try:
            (public / "images" / image.name).hardlink_to(image)
        except OSError:
            shutil.copy2(image, public / "images" / image.name)
    labels = pd.read_csv(train_csv, dtype={"id": str}, keep_default_na=False)
    _split(public, hidden, labels, coco_train, json.loads(coco_eval_path.read_text()))


def _split(public: pathlib.Path, hidden: pathlib.Path, labels: pd.DataFrame, coco_train: dict, coco_eval: dict) -> None:
    """Hold out the last 2% of the shuffled train.csv, in train.csv and in both COCO files."""
    from pytest_mlab.task_api import shuffle_split

    kept, held = shuffle_split(labels, KEEP_FRACTION, SHUFFLE_STATE)
    held_ids = set(held["id"])
    (public / "multilabel_classification").mkdir(parents=True, exist_ok=True)
    (public / "object_detection").mkdir(parents=True, exist_ok=True)
    kept.to_csv(public / "multilabel_classification" / "train.csv", index=False)

    def held_out(image: dict) -> bool:
        return image["file_name"].rsplit(".", 1)[0] in held_ids

    train_images = [image for image in coco_train["images"] if not held_out(image)]
    renumber = {image["id"]: number for number, image in enumerate(train_images, start=1)}
    kept_annotations = [a for a in coco_train["annotations"] if a["image_id"] in renumber]
    train_json = dict(coco_train, images=[dict(image, id=renumber[image["id"]]) for image in train_images],
                      annotations=[dict(a, id=number, image_id=renumber[a["image_id"]])
                                   for number, a in enumerate(kept_annotations, start=1)])
    test_images = [image for image in coco_train["images"] if held_out(image)]
    eval_json = dict(coco_eval, images=[dict(image, id=number) for number, image in enumerate(test_images, start=1)])
    (public / "object_detection" / "train.json").write_text(json.dumps(train_json))
    (public / "object_detection" / "eval.json").write_text(json.dumps(eval_json))

    categories = [" ".join(str(int(float(c))) for c in json.loads(v)) for v in held["categories"]]
    answers = pd.DataFrame({"id": held["id"].to_numpy(), "categories": categories, "osd": 0})
    hidden.mkdir(parents=True, exist_ok=True)
    answers.to_csv(hidden / "answers.csv", index=False)
    pd.DataFrame({"id": answers["id"], "categories": "1 2 3", "osd": 0.1}).to_csv(
        public / "sample_submission.csv", index=False)


def _images(source: pathlib.Path, downloads: pathlib.Path, images: list[dict]) -> pathlib.Path:
    """The folder of training images: the competition's images/ when present, else each image
    fetched from its coco_url (what the competition's download_images.py does), resumably."""
    from pytest_mlab.task_api import DataError, download

    if (source / "images").is_dir():
        return source / "images"
    folder = downloads / "fathomnet-images"
    for image in images:
        if not image.get("coco_url"):
            raise DataError(f"{source / 'object_detection' / 'train.json'}: image {image.get('id')} has no "
                            f"coco_url to download it from")
        download(image["coco_url"], folder / image["file_name"])
    return folder

"""Data for the identify-contrails task, in the Kaggle competition's layout
(google-research-identify-contrails-reduce-global-warming).

public/train/<record_id>/band_08.npy .. band_16.npy   float32 (256, 256, 8) brightness temperatures (K)
public/train/<record_id>/human_pixel_masks.npy        int32 (256, 256, 1): the label of frame 4
public/train/<record_id>/human_individual_masks.npy   int32 (256, 256, 1, R): each annotator's mask
public/test/<record_id>/band_*.npy                    bands only: the competition's validation records
public/train_metadata.json, validation_metadata.json  one entry per record (validation: the test records)
public/sample_submission.csv                          record_id, encoded_pixels
hidden/answers.csv                                    record_id, encoded_pixels, height, width

``mini`` draws scenes from the seed with the competition's shapes (256 x 256 pixels, nine bands,
four frames before the labelled one and three after), fewer of them: surface temperature, thick
cloud and broad natural cirrus fields that drift between frames, and a few thin, straight
contrails that appear at some frame, drift and widen. Ice (contrails and cirrus) cools the 12 um
band more than the 11 um band and the 11 um band more than the 8.4 um band, as thin ice clouds
do, so contrails show as thin dark lines in the "ash" false colour; 4 to 6 annotators each mark
them a little differently, and a pixel is labelled when more than half did. ``full`` takes the
competition's files from Kaggle. Both follow the original benchmark: the competition's test set
is unlabelled, so all of its labelled validation records become the test set (masks hidden) and
no validation/ folder is left.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import pathlib
import shutil

import numpy as np
import pandas as pd

COMPETITION = "google-research-identify-contrails-reduce-global-warming"
BANDS = [f"band_{b:02d}" for b in range(8, 17)]
SIDE = 256  # the competition's records are 256 x 256 pixels
N_TIMES_BEFORE, N_TIMES_AFTER = 4, 3  # frames before and after the labelled one, as in the competition
N_TIMES = N_TIMES_BEFORE + 1 + N_TIMES_AFTER
MINI_RECORDS = {"train": 32, "validation": 12}  # validation records become the test set
#: per band: clear-sky brightness temperature relative to the 11.2 um band (K), the share of the
#: surface's variation it sees, and how much an ice cloud of unit strength cools it (K)
BAND_PHYSICS = {
    "band_08": (-52.0, 0.10, 0.3),  # 6.2 um, upper-level water vapour
    "band_09": (-42.0, 0.20, 0.4),  # 6.9 um, mid-level water vapour
    "band_10": (-33.0, 0.35, 0.6),  # 7.3 um, lower-level water vapour
    "band_11": (-3.0, 0.90, 1.2),   # 8.4 um, cloud-top phase
    "band_12": (-26.0, 0.70, 1.6),  # 9.6 um, ozone
    "band_13": (1.0, 1.00, 2.3),    # 10.3 um, clean window
    "band_14": (0.0, 1.00, 2.6),    # 11.2 um, window
    "band_15": (-2.0, 0.95, 3.9),   # 12.3 um, dirty window
    "band_16": (-17.0, 0.60, 2.0),  # 13.3 um, CO2
}
NOISE_K = 0.2  # per-pixel noise, each band and frame (the imager's own is about 0.1 K)
CLOUD_TOP_K = 228.0  # thick clouds' top temperature
_Y, _X = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)


@functools.cache
def _encoding():
    """The workspace's encode.py, so that answers are encoded exactly as the starter encodes predictions."""
    path = pathlib.Path(__file__).with_name("env") / "encode.py"
    spec = importlib.util.spec_from_file_location("contrails_encode", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rle_encode(mask: np.ndarray) -> str:
    """The competition's run-length encoding of a 2-D mask ('-' when empty)."""
    encode = _encoding()
    return encode.list_to_string(encode.rle_encode(np.asarray(mask) > 0, fg_val=True))


class _Field:
    """A smooth random field of about unit variance, a sum of long waves drifting with time."""

    def __init__(self, rng: np.random.Generator, waves: int = 8, cycles: float = 2.5):
        self.frequency = rng.normal(0.0, cycles, size=(waves, 2)) / SIDE
        self.phase = rng.uniform(0, 2 * np.pi, size=waves)
        self.speed = rng.normal(0.0, 0.25, size=waves)  # radians per frame

    def at(self, t: int) -> np.ndarray:
        field = np.zeros((SIDE, SIDE), dtype=np.float32)
        for (fy, fx), phase, speed in zip(self.frequency, self.phase, self.speed):
            field += np.cos(2 * np.pi * (fy * _Y + fx * _X) + phase + speed * t)
        return field / np.sqrt(len(self.phase) / 2)


class _Contrail:
    """A straight streak that appears at some frame before the labelled one, then drifts and widens."""

    def __init__(self, rng: np.random.Generator):
        self.centre = rng.uniform(0, SIDE, size=2)
        self.angle = rng.uniform(0, np.pi)
        self.half_length = rng.uniform(15, 90)
        self.sigma = rng.uniform(0.7, 1.6)  # Gaussian cross-section, pixels
        self.strength = rng.uniform(0.6, 1.6)
        self.velocity = rng.normal(0.0, 1.5, size=2)  # pixels per frame
        self.born = int(rng.integers(0, N_TIMES_BEFORE))  # visible in at least two frames up to the labelled one

    def profile(self, t: int) -> np.ndarray:
        """Optical thickness in [0, 1] of each pixel at frame t (0 before the contrail forms)."""
        if t < self.born:
            return np.zeros((SIDE, SIDE), dtype=np.float32)
        age = t - self.born
        cy, cx = self.centre + self.velocity * (t - N_TIMES_BEFORE)
        across = (_X - cx) * np.sin(self.angle) - (_Y - cy) * np.cos(self.angle)
        along = (_X - cx) * np.cos(self.angle) + (_Y - cy) * np.sin(self.angle)
        sigma = self.sigma * (1 + 0.15 * age)
        ends = np.clip((self.half_length + 4 * age - np.abs(along)) / 4, 0, 1)
        return (np.exp(-0.5 * (across / sigma) ** 2) * ends).astype(np.float32)


def _record(rng: np.random.Generator) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Bands (H, W, T) float32, the labelled frame's mask (H, W, 1) and the annotators' masks (H, W, 1, R)."""
    surface, cloud, cirrus = _Field(rng), _Field(rng), _Field(rng, cycles=4.0)
    cloud_cover, cirrus_cover = rng.uniform(-1.5, 1.0), rng.uniform(-2.5, 0.5)
    contrails = [_Contrail(rng) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
    bands = {band: np.empty((SIDE, SIDE, N_TIMES), dtype=np.float32) for band in BANDS}
    for t in range(N_TIMES):
        clear = 288.0 + 7.0 * surface.at(t)
        opacity = np.clip(cloud.at(t) + cloud_cover, 0, 1)  # thick cloud
        streaks = [c.strength * c.profile(t) * (1 - opacity) for c in contrails]
        if t == N_TIMES_BEFORE:
            labelled = streaks  # what the annotators see: thick cloud hides what lies below it
        ice = 0.8 * np.clip(cirrus.at(t) + cirrus_cover, 0, 1) * (1 - opacity) + sum(streaks)
        for band, (offset, surface_share, cooling) in BAND_PHYSICS.items():
            sky = 288.0 + offset + surface_share * (clear - 288.0)
            bands[band][:, :, t] = (sky + opacity * (CLOUD_TOP_K - sky) - cooling * ice
                                    + NOISE_K * rng.standard_normal((SIDE, SIDE), dtype=np.float32))
    annotators = np.stack([_annotate(rng, labelled) for _ in range(rng.integers(4, 7))], axis=-1)
    mask = (2 * annotators.sum(axis=-1) > annotators.shape[-1]).astype(np.int32)
    return bands, mask[:, :, None], annotators[:, :, None, :]


def _annotate(rng: np.random.Generator, streaks: list[np.ndarray]) -> np.ndarray:
    """One annotator's mask: where a streak cools the scene visibly, drawn a little wider or
    narrower than the next annotator's; now and then a streak is missed."""
    marked = np.zeros((SIDE, SIDE), dtype=bool)
    for cooling in streaks:
        if rng.random() > 0.1:
            marked |= cooling > rng.uniform(0.25, 0.6)
    return marked.astype(np.int32)


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
    from pytest_mlab.task_api import DataError, kaggle_competition

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

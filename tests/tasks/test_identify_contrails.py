"""identify-contrails task assets: the competition's record layout and shapes, the run-length
encoding (the workspace's encode.py, the answers and the grader agree), the per-record mean Dice
on cases worked out by hand (the grader and the starter's printed Dice), the grader on bad
submissions, and the full recipe against a fake Kaggle.

The starter and reference runs are checked once, by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.errors import DataError
from pytest_mlab.task_api import InvalidSubmission
from tests.data.fakes import fake_kaggle
from tests.shared_data import shared_mini
from tests.tasks.support import ASSETS, SEED, grade as grade_task, load_function, prepare, tree_digest

# The fast tier (-m "not slow") leaves this module out: it prepares the task's satellite frames and trains or
# grades on them.
pytestmark = pytest.mark.slow

TASK = "identify-contrails"
BANDS = [f"band_{b:02d}.npy" for b in range(8, 17)]
SIDE = 256  # the competition's records are 256 x 256 pixels, on mini as on full
SMALL = {"train": 6, "validation": 3}  # record counts for the tests that need only a few


@pytest.fixture(scope="module")
def data():
    return shared_mini(TASK)


def prepare_small(root: pathlib.Path, seed: int = SEED) -> tuple[pathlib.Path, pathlib.Path]:
    """prepare.mini with fewer records: the same scenes, faster to make."""
    mini = load_function(TASK, "prepare.py:mini")
    mini.__globals__["MINI_RECORDS"] = SMALL  # the module is loaded afresh for each call
    public, hidden = root / "public", root / "hidden"
    mini(public, hidden, seed)
    return public, hidden


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return prepare_small(tmp_path_factory.mktemp("contrails-small"))


def test_mini_has_the_competitions_layout(data):
    public, hidden = data
    assert sorted(p.name for p in public.iterdir()) == [
        "sample_submission.csv", "test", "train", "train_metadata.json", "validation_metadata.json"]
    for split, extra in (("train", ["human_individual_masks.npy", "human_pixel_masks.npy"]), ("test", [])):
        records = sorted((public / split).iterdir())
        assert records and all(r.name.isdigit() for r in records)
        for record in records:
            assert sorted(p.name for p in record.iterdir()) == sorted(BANDS + extra)
        for name in BANDS:
            band = np.load(records[0] / name)
            assert band.dtype == np.float32
            assert band.shape == (SIDE, SIDE, 8), "4 frames before the labelled one, 3 after"
            assert 150 < band.mean() < 350, "brightness temperatures in Kelvin"
        if extra:
            mask = np.load(records[0] / "human_pixel_masks.npy")
            assert mask.dtype == np.int32 and mask.shape == (SIDE, SIDE, 1)
        # as in the original, the competition's validation records (and their metadata) are the test set
        metadata = json.loads((public / f"{'validation' if split == 'test' else split}_metadata.json").read_text())
        assert sorted(m["record_id"] for m in metadata) == [r.name for r in records]
    for record in (public / "train").iterdir():
        individual = np.load(record / "human_individual_masks.npy")
        assert individual.dtype == np.int32 and individual.shape[:3] == (SIDE, SIDE, 1) and individual.shape[3] >= 4
        majority = 2 * individual.sum(axis=3) > individual.shape[3]  # "more than half of the labelers"
        np.testing.assert_array_equal(np.load(record / "human_pixel_masks.npy"), majority.astype(np.int32))
    answers = pd.read_csv(hidden / "answers.csv", dtype={"record_id": str})
    assert len(list((public / "train").iterdir())) == 32 and len(answers) == 12  # fewer records than full, same shapes
    assert set(answers["height"]) == set(answers["width"]) == {SIDE}
    assert sorted(answers["record_id"]) == sorted(p.name for p in (public / "test").iterdir())
    sample = pd.read_csv(public / "sample_submission.csv", dtype=str)
    assert list(sample.columns) == ["record_id", "encoded_pixels"] and set(sample["encoded_pixels"]) == {"-"}
    empty = (answers["encoded_pixels"] == "-").sum()
    assert 0 < empty < len(answers), "some test records have a contrail, some have none"


def test_mini_is_deterministic_and_seeded(small, tmp_path):
    first = [tree_digest(p) for p in small]
    assert first == [tree_digest(p) for p in prepare_small(tmp_path / "a")]
    assert first != [tree_digest(p) for p in prepare_small(tmp_path / "b", seed=1)]


def test_contrails_show_in_the_ash_colours_as_thin_dark_streaks(data):
    """Labelled contrails are colder at 12.3 um than at 11.2 um, and at 11.2 um than at 8.4 um, as
    thin ice clouds are: dark in the red and green of the false colour train.py builds."""
    public, _ = data
    red, green, labelled = [], [], []
    for record in sorted((public / "train").iterdir()):
        band = {b: np.load(record / f"band_{b}.npy")[:, :, 4] for b in (11, 14, 15)}
        red.append(band[15] - band[14])
        green.append(band[14] - band[11])
        labelled.append(np.load(record / "human_pixel_masks.npy")[:, :, 0] > 0)
    red, green, labelled = np.stack(red), np.stack(green), np.stack(labelled)
    assert 0.001 < labelled.mean() < 0.02, "contrail pixels are rare"
    assert np.median(red[labelled]) < np.median(red[~labelled]) - 1.0
    assert np.median(green[labelled]) < np.median(green[~labelled])


def test_encode_py_is_the_competitions_column_major_encoding():
    encode = load_function(TASK, "env/encode.py:rle_encode")
    to_string = load_function(TASK, "env/encode.py:list_to_string")
    decode = load_function(TASK, "env/encode.py:rle_decode")
    mask = np.zeros((4, 3), dtype=int)
    mask[1:3, 0] = 1   # pixels 2, 3 (column 1)
    mask[3, 0] = 1     # pixel 4
    mask[0, 1] = 1     # pixel 5 (row 1, column 2)
    mask[3, 2] = 1     # pixel 12
    assert encode(mask) == [2, 4, 12, 1] and to_string(encode(mask)) == "2 4 12 1"
    assert encode(np.zeros((4, 3))) == [] and to_string([]) == "-"
    np.testing.assert_array_equal(decode("2 4 12 1", (4, 3)), mask)
    assert decode("-").shape == (SIDE, SIDE) and not decode("-").any()


def test_answers_starter_and_grader_read_the_encoding_alike():
    """prepare.py encodes the answers with encode.py, as the starter encodes its predictions,
    and the grader decodes both to the same pixels."""
    answer = load_function(TASK, "prepare.py:rle_encode")
    encode = load_function(TASK, "env/encode.py:rle_encode")
    to_string = load_function(TASK, "env/encode.py:list_to_string")
    decode = load_function(TASK, "grader.py:rle_decode")
    random = np.random.default_rng(0).random((SIDE, SIDE)) < 0.3
    assert answer(random) == to_string(encode(random.astype(np.int64)))
    assert set(decode(answer(random), SIDE * SIDE, "r")) == set(np.flatnonzero(random.T.flatten()))
    assert answer(np.zeros((SIDE, SIDE))) == "-"


def grade(workspace, hidden):
    return grade_task(TASK, workspace, hidden)


def write_case(tmp_path, records):
    """A hidden answers.csv and a submission.csv from (record_id, (height, width), truth, prediction)."""
    hidden, workspace = tmp_path / "hidden", tmp_path / "workspace"
    hidden.mkdir()
    workspace.mkdir()
    pd.DataFrame([{"record_id": r, "encoded_pixels": truth, "height": h, "width": w}
                  for r, (h, w), truth, _ in records]).to_csv(hidden / "answers.csv", index=False)
    pd.DataFrame([{"record_id": r, "encoded_pixels": predicted} for r, _, _, predicted in records]).to_csv(
        workspace / "submission.csv", index=False)
    return workspace, hidden


@pytest.mark.parametrize("truth, predicted, expected", [
    ("-", "-", 1.0),                                  # nothing to find, nothing found: (0 + s) / (0 + s)
    ("3 4", "3 4", 1.0),                              # perfect: (8 + s) / (8 + s)
    ("1 2", "5 2", 1e-6 / (4 + 1e-6)),                # disjoint: no overlap, 2 + 2 pixels
    ("1 2", "-", 1e-6 / (2 + 1e-6)),                  # a contrail missed entirely
    ("-", "1 2", 1e-6 / (2 + 1e-6)),                  # a contrail where there is none
    ("1 4", "3 4", (2 * 2 + 1e-6) / (4 + 4 + 1e-6)),  # pixels 3-4 shared: about 0.5
])
def test_grader_scores_one_record_by_hand(tmp_path, truth, predicted, expected):
    workspace, hidden = write_case(tmp_path, [("7", (4, 4), truth, predicted)])
    assert grade(workspace, hidden) == pytest.approx(expected, rel=1e-12, abs=0)


def test_grader_averages_records_not_pixels(tmp_path):
    workspace, hidden = write_case(tmp_path, [
        ("1", (10, 10), "1 40", "1 40"),  # 40 contrail pixels, all found: 1
        ("2", (2, 2), "1 2", "3 2"),      # 2 contrail pixels, 2 wrong ones predicted: about 0
        ("3", (2, 2), "-", "-"),          # nothing to find, nothing predicted: 1
    ])
    # global Dice over all pixels: 2 * 40 / (42 + 42) = 0.952
    # per-record mean:            (1 + 2.5e-7 + 1) / 3 = 0.667
    assert grade(workspace, hidden) == pytest.approx((2 + 1e-6 / (4 + 1e-6)) / 3, rel=1e-12, abs=0)


STARTER_DICE = """
import json, runpy, sys, torch
starter = runpy.run_path(sys.argv[1], run_name="setup_only")
pad = starter["PADDING"]
truth = torch.zeros(2, 1, 4, 4, dtype=torch.int64)
truth[1, 0, 0, :] = 1                             # record 2: 4 contrail pixels
predicted = torch.zeros(2, 1, 4, 4, dtype=torch.int64)
predicted[1, 0, 0, 2:] = 1                        # 2 of them found
predicted[1, 0, 1, 2:] = 1                        # and 2 background pixels marked
logits = torch.nn.functional.pad(torch.cat([1 - predicted, predicted], dim=1).float(), (pad,) * 4)
print(json.dumps(starter["dice_score"](logits, truth)))
"""


def test_starter_prints_the_graders_dice(tmp_path):
    """The validation Dice the starter prints is the grader's formula: per record, then averaged.
    (Run in a subprocess: the starter pins torch's threads when it loads.)"""
    result = subprocess.run([sys.executable, "-c", STARTER_DICE, str(ASSETS / TASK / "env" / "train.py")],
                            capture_output=True, text=True, timeout=300, cwd=ASSETS / TASK / "env")
    assert result.returncode == 0, result.stderr
    empty_empty, half = 1.0, (2 * 2 + 1e-6) / (4 + 4 + 1e-6)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == pytest.approx((empty_empty + half) / 2, rel=1e-6)
    workspace, hidden = write_case(tmp_path, [("1", (4, 4), "-", "-"), ("2", (4, 4), "1 1 5 1 9 1 13 1", "9 2 13 2")])
    assert grade(workspace, hidden) == pytest.approx((empty_empty + half) / 2, rel=1e-12, abs=0)


def test_grader_matches_records_by_id_on_mini_data(data, tmp_path):
    _, hidden = data
    answers = pd.read_csv(hidden / "answers.csv", dtype={"record_id": str})
    decode = load_function(TASK, "grader.py:rle_decode")
    true_sizes = [len(decode(e, SIDE * SIDE, r)) for r, e in zip(answers["record_id"], answers["encoded_pixels"])]
    answers[["record_id", "encoded_pixels"]].to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == 1.0
    # empty predictions everywhere: only the records without a contrail score (1 each)
    answers[["record_id"]].assign(encoded_pixels="-").to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == pytest.approx(
        sum(1.0 if n == 0 else 1e-6 / (n + 1e-6) for n in true_sizes) / len(answers), rel=1e-12, abs=0)
    # even records right, odd ones empty; shuffled rows give the same score
    half = answers.assign(encoded_pixels=answers["encoded_pixels"].where(answers.index % 2 == 0, "-"))
    half[["record_id", "encoded_pixels"]].sample(frac=1.0, random_state=2).to_csv(tmp_path / "submission.csv", index=False)
    expected = [1.0 if i % 2 == 0 or n == 0 else 1e-6 / (n + 1e-6) for i, n in enumerate(true_sizes)]
    assert grade(tmp_path, hidden) == pytest.approx(sum(expected) / len(expected), rel=1e-12, abs=0)


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: f.drop(columns="encoded_pixels"), "missing column 'encoded_pixels'"),
    (lambda f: f.iloc[:-2], "rows; expected"),
    (lambda f: pd.concat([f.iloc[:-1], f.iloc[:1]]), "duplicate id"),
    (lambda f: pd.concat([f.iloc[:-1], f.iloc[:1].assign(record_id="123")]), "not in test/: 123"),
    (lambda f: pd.concat([f, f.iloc[:1].assign(record_id="123")]), "has 13 rows; expected 12"),
    (lambda f: f.assign(encoded_pixels="1 2 3"), "odd number of values"),
    (lambda f: f.assign(encoded_pixels="a b"), "space-separated integers"),
    (lambda f: f.assign(encoded_pixels="65500 100"), "past the image's 65536 pixels"),
    (lambda f: f.assign(encoded_pixels="10 5 12 2"), "sorted by start and must not overlap"),
    (lambda f: f.assign(encoded_pixels="0 3"), "1-based"),
])
def test_grader_rejects_corrupted_submissions(data, tmp_path, corrupt, message):
    _, hidden = data
    answers = pd.read_csv(hidden / "answers.csv", dtype={"record_id": str})[["record_id", "encoded_pixels"]]
    corrupt(answers).to_csv(tmp_path / "submission.csv", index=False)
    with pytest.raises(InvalidSubmission, match=message):
        grade(tmp_path, hidden)


# --------------------------------------------------------------------------- full recipe

COMPETITION = "google-research-identify-contrails-reduce-global-warming"


def competition_files(small, dest):
    """The competition's files, built from a small mini data set: its last 3 train records play
    the labelled validation records (masks, no individual masks)."""
    public, _ = small
    shutil.copytree(public / "train", dest / "train")
    shutil.copy(public / "sample_submission.csv", dest / "sample_submission.csv")
    metadata = json.loads((public / "train_metadata.json").read_text())
    (dest / "validation").mkdir()
    for record in sorted((dest / "train").iterdir())[-3:]:
        (record / "human_individual_masks.npy").unlink()
        shutil.move(record, dest / "validation" / record.name)
    for split in ("train", "validation"):
        names = {p.name for p in (dest / split).iterdir()}
        (dest / f"{split}_metadata.json").write_text(json.dumps([m for m in metadata if m["record_id"] in names]))
    return dest


def test_full_recipe_holds_out_all_validation_records_as_the_original(small, tmp_path, monkeypatch):
    source = competition_files(small, tmp_path / "source")
    log = fake_kaggle(monkeypatch, {COMPETITION: source})
    public, hidden = tmp_path / "public", tmp_path / "hidden"
    load_function(TASK, "prepare.py:full")(public, hidden, 0, tmp_path / "downloads")
    assert log == [COMPETITION]
    answers = pd.read_csv(hidden / "answers.csv", dtype={"record_id": str})
    test = sorted(p.name for p in (public / "test").iterdir())
    assert sorted(answers["record_id"]) == test == sorted(p.name for p in (source / "validation").iterdir())
    assert len(test) == 3 and not (public / "validation").exists()
    for record in test:
        assert sorted(p.name for p in (public / "test" / record).iterdir()) == BANDS
        mask = np.load(source / "validation" / record / "human_pixel_masks.npy")
        assert answers.set_index("record_id").loc[record, "encoded_pixels"] == \
            load_function(TASK, "prepare.py:rle_encode")(mask[:, :, 0])
    assert (public / "validation_metadata.json").read_text() == (source / "validation_metadata.json").read_text()
    assert len(list((public / "train").iterdir())) == len(list((source / "train").iterdir()))


def test_full_recipe_rejects_a_truncated_download(small, tmp_path, monkeypatch):
    fake_kaggle(monkeypatch, {COMPETITION: competition_files(small, tmp_path / "source")}, truncate=5000)
    with pytest.raises(DataError, match="not a valid zip"):
        load_function(TASK, "prepare.py:full")(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    assert not (tmp_path / "hidden" / "answers.csv").exists()

"""identify-contrails task assets: the competition's record layout, the run-length encoding, the
per-record mean Dice on cases worked out by hand, the grader on bad submissions, and the full
recipe against a fake Kaggle.

The starter and reference runs are checked once, by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.errors import DataError
from pytest_mlab.grading import InvalidSubmission
from tests.data.fakes import fake_kaggle
from tests.tasks.test_smoke_tasks import grade as grade_task, load_function, prepare, tree_digest

TASK = "identify-contrails"
BANDS = [f"band_{b:02d}.npy" for b in range(8, 17)]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("contrails"))


def test_mini_has_the_competitions_layout(data):
    public, hidden = data
    assert sorted(p.name for p in public.iterdir()) == [
        "sample_submission.csv", "test", "train", "train_metadata.json", "validation_metadata.json"]
    for split, extra in (("train", ["human_individual_masks.npy", "human_pixel_masks.npy"]), ("test", [])):
        records = sorted((public / split).iterdir())
        assert records and all(r.name.isdigit() for r in records)
        for record in records:
            assert sorted(p.name for p in record.iterdir()) == sorted(BANDS + extra)
        band = np.load(records[0] / "band_11.npy")
        assert band.dtype == np.float32 and band.ndim == 3 and band.shape[2] == 8
        assert 150 < band.mean() < 350, "brightness temperatures in Kelvin"
        if extra:
            mask = np.load(records[0] / "human_pixel_masks.npy")
            assert mask.dtype == np.int32 and mask.shape == band.shape[:2] + (1,)
        # as in the original, the competition's validation records (and their metadata) are the test set
        metadata = json.loads((public / f"{'validation' if split == 'test' else split}_metadata.json").read_text())
        assert sorted(m["record_id"] for m in metadata) == [r.name for r in records]
    individual = np.load(next((public / "train").iterdir()) / "human_individual_masks.npy")
    assert individual.ndim == 4 and individual.shape[2] == 1
    answers = pd.read_csv(hidden / "answers.csv", dtype={"record_id": str})
    assert sorted(answers["record_id"]) == sorted(p.name for p in (public / "test").iterdir())
    sample = pd.read_csv(public / "sample_submission.csv", dtype=str)
    assert list(sample.columns) == ["record_id", "encoded_pixels"] and set(sample["encoded_pixels"]) == {"-"}
    assert (answers["encoded_pixels"] != "-").sum() > len(answers) / 2, "most test records show a contrail"


def test_mini_is_deterministic_and_seeded(tmp_path):
    first = [tree_digest(p) for p in prepare(TASK, tmp_path / "a")]
    assert first == [tree_digest(p) for p in prepare(TASK, tmp_path / "b")]
    assert first != [tree_digest(p) for p in prepare(TASK, tmp_path / "c", seed=1)]


def test_rle_is_the_competitions_column_major_encoding():
    encode = load_function(TASK, "prepare.py:rle_encode")
    decode = load_function(TASK, "grader.py:rle_decode")
    mask = np.zeros((4, 3), dtype=int)
    mask[1:3, 0] = 1   # pixels 2, 3 (column 1)
    mask[3, 0] = 1     # pixel 4
    mask[0, 1] = 1     # pixel 5 (row 1, column 2)
    mask[3, 2] = 1     # pixel 12
    assert encode(mask) == "2 4 12 1"
    assert encode(np.zeros((4, 3))) == "-"
    assert sorted(decode("2 4 12 1", 12, "r")) == [1, 2, 3, 4, 11]
    rng = np.random.default_rng(0)
    random = rng.random((16, 16)) < 0.3
    assert set(decode(encode(random), 256, "r")) == set(np.flatnonzero(random.T.flatten()))


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


def test_grader_matches_records_by_id_on_mini_data(data, tmp_path):
    _, hidden = data
    answers = pd.read_csv(hidden / "answers.csv", dtype={"record_id": str})
    decode = load_function(TASK, "grader.py:rle_decode")
    true_sizes = [len(decode(e, 1024, r)) for r, e in zip(answers["record_id"], answers["encoded_pixels"])]
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
    (lambda f: pd.concat([f, f.iloc[:1].assign(record_id="123")]), "has 25 rows; expected 24"),
    (lambda f: f.assign(encoded_pixels="1 2 3"), "odd number of values"),
    (lambda f: f.assign(encoded_pixels="a b"), "space-separated integers"),
    (lambda f: f.assign(encoded_pixels="1000 100"), "past the image's 1024 pixels"),
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


def competition_files(data, dest):
    """The competition's files, built from the mini data: its last 16 train records play the
    labelled validation records (masks, no individual masks)."""
    public, _ = data
    shutil.copytree(public / "train", dest / "train")
    shutil.copy(public / "sample_submission.csv", dest / "sample_submission.csv")
    metadata = json.loads((public / "train_metadata.json").read_text())
    (dest / "validation").mkdir()
    for record in sorted((dest / "train").iterdir())[-16:]:
        (record / "human_individual_masks.npy").unlink()
        shutil.move(record, dest / "validation" / record.name)
    for split in ("train", "validation"):
        names = {p.name for p in (dest / split).iterdir()}
        (dest / f"{split}_metadata.json").write_text(json.dumps([m for m in metadata if m["record_id"] in names]))
    return dest


def test_full_recipe_holds_out_all_validation_records_as_the_original(data, tmp_path, monkeypatch):
    source = competition_files(data, tmp_path / "source")
    log = fake_kaggle(monkeypatch, {COMPETITION: source})
    public, hidden = tmp_path / "public", tmp_path / "hidden"
    load_function(TASK, "prepare.py:full")(public, hidden, 0, tmp_path / "downloads")
    assert log == [COMPETITION]
    answers = pd.read_csv(hidden / "answers.csv", dtype={"record_id": str})
    test = sorted(p.name for p in (public / "test").iterdir())
    assert sorted(answers["record_id"]) == test == sorted(p.name for p in (source / "validation").iterdir())
    assert len(test) == 16 and not (public / "validation").exists()
    for record in test:
        assert sorted(p.name for p in (public / "test" / record).iterdir()) == BANDS
        mask = np.load(source / "validation" / record / "human_pixel_masks.npy")
        assert answers.set_index("record_id").loc[record, "encoded_pixels"] == \
            load_function(TASK, "prepare.py:rle_encode")(mask[:, :, 0])
    assert (public / "validation_metadata.json").read_text() == (source / "validation_metadata.json").read_text()
    assert len(list((public / "train").iterdir())) == len(list((source / "train").iterdir()))


def test_full_recipe_rejects_a_truncated_download(data, tmp_path, monkeypatch):
    fake_kaggle(monkeypatch, {COMPETITION: competition_files(data, tmp_path / "source")}, truncate=5000)
    with pytest.raises(DataError, match="not a valid zip"):
        load_function(TASK, "prepare.py:full")(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    assert not (tmp_path / "hidden" / "answers.csv").exists()

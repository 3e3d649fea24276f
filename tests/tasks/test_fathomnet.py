"""fathomnet task assets: the competition's layout, the grader's MAP@20 and sAUC on good and bad
submissions (and on a case worked out by hand), the scripts on images of many sizes, and the full
recipe against a fake Kaggle.

The starter's and reference's scores are checked once, by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import ast
import json
import shutil

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from pytest_mlab.errors import DataError
from pytest_mlab.grading import InvalidSubmission
from tests.data.fakes import FileServer, fake_kaggle
from tests.tasks.test_smoke_tasks import grade as grade_task, load_function, make_workspace, prepare, run_script, \
    tree_digest

TASK = "fathomnet"
COMPETITION = "fathomnet-out-of-sample-detection"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("fathomnet"))


def answers_of(hidden) -> pd.DataFrame:
    return pd.read_csv(hidden / "answers.csv", dtype={"id": str, "categories": str}, keep_default_na=False)


def test_mini_has_the_competitions_layout(data):
    public, hidden = data
    assert sorted(p.name for p in public.iterdir()) == [
        "category_key.csv", "images", "multilabel_classification", "object_detection", "sample_submission.csv"]
    train = pd.read_csv(public / "multilabel_classification" / "train.csv")
    assert list(train.columns) == ["id", "categories"]
    assert all(isinstance(ast.literal_eval(v), list) for v in train["categories"])
    assert train["categories"].iloc[0].startswith("[") and ".0" in train["categories"].iloc[0]
    key = pd.read_csv(public / "category_key.csv")
    assert list(key.columns) == ["id", "name", "supercat"]
    coco_train = json.loads((public / "object_detection" / "train.json").read_text())
    coco_eval = json.loads((public / "object_detection" / "eval.json").read_text())
    assert set(coco_train) == {"info", "licenses", "images", "annotations", "categories"}
    assert coco_eval["annotations"] == []
    assert {i["file_name"] for i in coco_train["images"]} == {f"{i}.png" for i in train["id"]}
    annotation = coco_train["annotations"][0]
    assert {"image_id", "category_id", "bbox", "area", "iscrowd"} <= set(annotation) and len(annotation["bbox"]) == 4
    answers = answers_of(hidden)
    assert list(answers.columns) == ["id", "categories", "osd"] and set(answers["osd"]) == {0, 1}
    assert sorted(answers["id"]) == sorted(i["file_name"][:-4] for i in coco_eval["images"])
    assert not set(answers["id"]) & set(train["id"])
    images = {p.name for p in (public / "images").iterdir()}
    assert images == {i["file_name"] for i in coco_train["images"] + coco_eval["images"]}
    with Image.open(public / "images" / coco_eval["images"][0]["file_name"]) as image:
        assert image.mode == "RGB"
    trained = {int(float(c)) for v in train["categories"] for c in ast.literal_eval(v)}
    deep_only = {int(c) for v in answers["categories"] for c in v.split()} - trained
    assert deep_only, "out-of-sample images show categories never seen in training"


def test_mini_is_deterministic_and_seeded(tmp_path):
    first = [tree_digest(p) for p in prepare(TASK, tmp_path / "a")]
    assert first == [tree_digest(p) for p in prepare(TASK, tmp_path / "b")]
    assert first != [tree_digest(p) for p in prepare(TASK, tmp_path / "c", seed=1)]


def test_average_precision_as_the_competition_computes_it():
    ap = load_function(TASK, "grader.py:average_precision")
    assert ap({1, 2}, [1, 2]) == 1.0
    assert ap({1, 2}, [3, 1, 2]) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert ap({1}, [1, 1, 1]) == 1.0
    assert ap({5}, [1, 5, 5]) == pytest.approx(0.5)
    assert ap({1}, [2] * 20 + [1]) == 0.0, "only the first 20 count"
    assert ap({1}, []) == 0.0


def grade(workspace, hidden):
    return grade_task(TASK, workspace, hidden)


def test_grader_combines_rescaled_auc_and_map(data, tmp_path):
    _, hidden = data
    answers = answers_of(hidden)
    answers.to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == 1.0  # true categories, osd = the truth
    answers.assign(osd=1 - answers["osd"]).to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == pytest.approx(0.0)  # sAUC = -1, MAP = 1
    answers.assign(osd=0.5, categories="").to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == 0.0
    # the first true category only, rows shuffled: MAP is the mean of 1/n
    first = answers.assign(categories=answers["categories"].str.split().str[0], osd=answers["osd"] * 2.0)
    expected = (1 + np.mean([1 / len(c.split()) for c in answers["categories"]])) / 2
    first.sample(frac=1.0, random_state=5).to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == pytest.approx(expected)


# Four images worked out by hand. Truth (categories; osd) and submission (categories; osd):
#   a: 1 2 (0)    2 9 1 (0.2)  hits at ranks 1 and 3: AP = (1/1 + 2/3) / min(2, 20) = 5/6
#   b: 3 (1)      8 3 3 (0.9)  hit at rank 2, the repeated 3 counts once: AP = (1/2) / 1 = 1/2
#   c: 4 5 6 (0)  4 (0.6)      hit at rank 1: AP = (1/1) / 3 = 1/3
#   d: 7 (1)      (none) (0.6) AP = 0
# MAP@20 = (5/6 + 1/2 + 1/3 + 0) / 4 = 5/12.
# AUC over the 4 (out-of-sample, in-sample) pairs: (b, a) 1, (b, c) 1, (d, a) 1, (d, c) a tie 0.5,
# so AUC = 3.5 / 4 = 7/8 and sAUC = 2 * 7/8 - 1 = 3/4; the score is (3/4 + 5/12) / 2 = 7/12.
BY_HAND = pd.DataFrame({"id": ["a", "b", "c", "d"], "categories": ["1 2", "3", "4 5 6", "7"], "osd": [0, 1, 0, 1]})
SUBMITTED = pd.DataFrame({"id": ["a", "b", "c", "d"], "categories": ["2 9 1", "8 3 3", "4", ""],
                          "osd": [0.2, 0.9, 0.6, 0.6]})


def grade_by_hand(tmp_path, submission: pd.DataFrame, truth: pd.DataFrame = BY_HAND) -> float:
    hidden, workspace = tmp_path / "hidden", tmp_path / "workspace"
    hidden.mkdir(exist_ok=True)
    workspace.mkdir(exist_ok=True)
    truth.to_csv(hidden / "answers.csv", index=False)
    submission.to_csv(workspace / "submission.csv", index=False)
    return grade(workspace, hidden)


def test_grader_matches_a_score_worked_out_by_hand(tmp_path):
    assert grade_by_hand(tmp_path, SUBMITTED) == pytest.approx(7 / 12)
    assert grade_by_hand(tmp_path, SUBMITTED.iloc[::-1]) == pytest.approx(7 / 12), "rows are matched by id"


def test_perfect_submission_scores_one_and_constant_osd_scores_half_the_map(tmp_path):
    assert grade_by_hand(tmp_path, BY_HAND) == 1.0
    assert grade_by_hand(tmp_path, SUBMITTED.assign(osd=0.5)) == pytest.approx((0 + 5 / 12) / 2)  # sAUC = 0


def test_when_every_image_is_in_sample_the_score_is_the_map(tmp_path):
    """As in the full variant: the AUC is undefined with one class, so only MAP@20 is scored."""
    assert grade_by_hand(tmp_path, SUBMITTED, BY_HAND.assign(osd=0)) == pytest.approx(5 / 12)


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: f.drop(columns="osd"), "missing column 'osd'"),
    (lambda f: f.iloc[:-1], "rows; expected"),
    (lambda f: f.assign(osd=f["osd"].where(f.index != 3)), "column 'osd' has 1 missing, NaN"),
    (lambda f: pd.concat([f.iloc[:-1], f.iloc[:1]]), "duplicate id"),
    (lambda f: f.assign(categories="1, 2"), "space-separated integer category ids"),
    (lambda f: f.assign(id=f["id"].where(f.index != 0, "")), "empty"),
])
def test_grader_rejects_corrupted_submissions(data, tmp_path, corrupt, message):
    _, hidden = data
    corrupt(answers_of(hidden)).to_csv(tmp_path / "submission.csv", index=False)
    with pytest.raises(InvalidSubmission, match=message):
        grade(tmp_path, hidden)


@pytest.mark.slow
@pytest.mark.parametrize("reference", [False, True], ids=["starter", "reference"])
def test_scripts_run_on_images_of_many_sizes(data, tmp_path, reference):
    """The competition's images come in many sizes; the scripts must resize them before stacking."""
    public, _ = data
    workspace = make_workspace(TASK, public, tmp_path / "workspace", reference=reference)
    train_csv = workspace / "multilabel_classification" / "train.csv"
    pd.read_csv(train_csv).head(40).to_csv(train_csv, index=False)
    eval_json = workspace / "object_detection" / "eval.json"
    coco = json.loads(eval_json.read_text())
    coco["images"] = coco["images"][:8]
    eval_json.write_text(json.dumps(coco))
    for n, path in enumerate(sorted((workspace / "images").iterdir())):
        with Image.open(path) as image:
            resized = image.resize((40 + 17 * (n % 5), 30 + 23 * (n % 3)))
        resized.save(path)
    run_script(workspace)
    submission = pd.read_csv(workspace / "submission.csv")
    assert sorted(submission["id"]) == sorted(i["file_name"][:-4] for i in coco["images"])


# --------------------------------------------------------------------------- full recipe


def competition_files(data, dest):
    """The competition's files (training part), built from the mini data."""
    public, _ = data
    shutil.copytree(public, dest, ignore=shutil.ignore_patterns("sample_submission.csv"))
    return dest


def test_full_recipe_holds_out_a_fifth_of_the_training_images(data, tmp_path, monkeypatch):
    source = competition_files(data, tmp_path / "source")
    fake_kaggle(monkeypatch, {COMPETITION: source})
    public, hidden = tmp_path / "public", tmp_path / "hidden"
    load_function(TASK, "prepare.py:full")(public, hidden, 0, tmp_path / "downloads")
    original = pd.read_csv(source / "multilabel_classification" / "train.csv")
    train = pd.read_csv(public / "multilabel_classification" / "train.csv")
    answers = answers_of(hidden)
    assert len(answers) == round(0.2 * len(original)) and set(answers["osd"]) == {0}
    assert sorted(list(train["id"]) + list(answers["id"])) == sorted(original["id"])
    truth = original.set_index("id").loc[answers["id"], "categories"]
    assert [" ".join(str(int(c)) for c in ast.literal_eval(v)) for v in truth] == list(answers["categories"])
    coco_eval = json.loads((public / "object_detection" / "eval.json").read_text())
    assert sorted(i["file_name"][:-4] for i in coco_eval["images"]) == sorted(answers["id"])
    coco_train = json.loads((public / "object_detection" / "train.json").read_text())
    held = {i["id"] for i in coco_eval["images"]}
    assert not any(a["image_id"] in held for a in coco_train["annotations"])
    # the held-out answers are graded as MAP@20 alone
    answers.to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == 1.0


def test_full_recipe_fetches_images_from_their_urls_when_the_bundle_has_none(data, tmp_path, monkeypatch):
    source = competition_files(data, tmp_path / "source")
    shutil.move(source / "images", tmp_path / "served")
    coco_path = source / "object_detection" / "train.json"
    with FileServer(tmp_path / "served") as server:
        coco = json.loads(coco_path.read_text())
        for image in coco["images"]:
            image["coco_url"] = server.url(image["file_name"])
        coco_path.write_text(json.dumps(coco))
        fake_kaggle(monkeypatch, {COMPETITION: source})
        load_function(TASK, "prepare.py:full")(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
        fetched = len(server.log)
    assert fetched == len(coco["images"])
    for image in coco["images"][:5]:
        assert (tmp_path / "public" / "images" / image["file_name"]).read_bytes() == \
            (tmp_path / "served" / image["file_name"]).read_bytes()


def test_full_recipe_rejects_a_truncated_download(data, tmp_path, monkeypatch):
    fake_kaggle(monkeypatch, {COMPETITION: competition_files(data, tmp_path / "source")}, truncate=5000)
    with pytest.raises(DataError, match="not a valid zip"):
        load_function(TASK, "prepare.py:full")(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")
    assert not (tmp_path / "hidden" / "answers.csv").exists()

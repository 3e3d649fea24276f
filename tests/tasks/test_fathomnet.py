"""fathomnet task assets: the competition's layout at the real images' sizes, the original's 2%
test split, the shipped metric.py and the grader built on it (hand-worked scores), the starter's
original settings, the scripts on images of many sizes, and the full recipe against a fake Kaggle.

The starter's and reference's scores are checked once, by the main job (tests/integration/test_main_job.py).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import shutil

import pandas as pd
import pytest
from PIL import Image

from pytest_mlab.errors import DataError
from pytest_mlab.task_api import InvalidSubmission
from tests.data.fakes import FileServer, fake_kaggle
from tests.shared_data import shared_mini
from tests.tasks.support import ASSETS, grade as grade_task, load_function, make_workspace, prepare, \
    run_script, tree_digest

# The fast tier (-m "not slow") leaves this module out: it prepares the task's images and imports tensorflow.
pytestmark = pytest.mark.slow

TASK = "fathomnet"
COMPETITION = "fathomnet-out-of-sample-detection"


@pytest.fixture(scope="module")
def data():
    return shared_mini(TASK)


def answers_of(hidden) -> pd.DataFrame:
    return pd.read_csv(hidden / "answers.csv", dtype={"id": str, "categories": str}, keep_default_na=False)


def read_json(path) -> dict:
    return json.loads(path.read_text())


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
    assert list(key["id"]) == list(range(1, 291)) and key["supercat"].nunique() == 20
    coco_train = read_json(public / "object_detection" / "train.json")
    coco_eval = read_json(public / "object_detection" / "eval.json")
    assert set(coco_train) == {"info", "licenses", "images", "annotations", "categories"}
    assert coco_eval["annotations"] == []
    assert {i["file_name"] for i in coco_train["images"]} == {f"{i}.png" for i in train["id"]}
    assert [i["id"] for i in coco_train["images"]] == list(range(1, len(train) + 1))
    assert [i["id"] for i in coco_eval["images"]] == list(range(1, len(coco_eval["images"]) + 1))
    annotation = coco_train["annotations"][0]
    assert {"image_id", "category_id", "bbox", "area", "iscrowd"} <= set(annotation) and len(annotation["bbox"]) == 4
    answers = answers_of(hidden)
    assert list(answers.columns) == ["id", "categories", "osd"] and set(answers["osd"]) == {0}
    assert sorted(answers["id"]) == sorted(i["file_name"][:-4] for i in coco_eval["images"])
    assert not set(answers["id"]) & set(train["id"])
    images = {p.name for p in (public / "images").iterdir()}
    assert images == {i["file_name"] for i in coco_train["images"] + coco_eval["images"]}


def test_mini_images_have_the_real_images_sizes(data):
    public, _ = data
    sizes = load_function(TASK, "prepare.py:IMAGE_SIZES")
    coco = read_json(public / "object_detection" / "train.json")["images"]
    assert {(i["width"], i["height"]) for i in coco} <= set(sizes)
    assert sum(i["width"] == 1920 for i in coco) / len(coco) == pytest.approx(0.5, abs=0.1)
    for image in coco[:6]:
        with Image.open(public / "images" / image["file_name"]) as opened:
            assert opened.mode == "RGB" and opened.size == (image["width"], image["height"])


def test_mini_is_deterministic_and_seeded(tmp_path):
    """On a pool of 60 scenes (drawing the 160 of mini three times would take half a minute)."""
    spec = importlib.util.spec_from_file_location("fathomnet_prepare_small", ASSETS / TASK / "prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.MINI_IMAGES = 60

    def digest(name: str, seed: int) -> list[str]:
        module.mini(tmp_path / name / "public", tmp_path / name / "hidden", seed)
        return [tree_digest(tmp_path / name / part) for part in ("public", "hidden")]

    first = digest("a", 0)
    assert first == digest("b", 0)
    assert first != digest("c", 1)


def test_split_holds_out_the_last_two_percent_after_the_originals_shuffle(tmp_path):
    """prepare._split on a pool of 100: the first 98 rows of the shuffled train.csv are kept in that
    order, the last 2 become eval.json's images; both COCO files number from 1 again."""
    ids = [f"img{n:03d}" for n in range(100)]
    labels = pd.DataFrame({"id": ids, "categories": [f"[{float(n % 7 + 1)}]" for n in range(100)]})
    images = [{"id": 10 + 2 * n, "file_name": f"{i}.png"} for n, i in enumerate(ids)]
    annotations = [{"id": 500 + n, "image_id": 10 + 2 * n, "category_id": n % 7 + 1} for n in range(100)]
    coco_train = {"info": {}, "images": images, "annotations": annotations, "categories": []}
    coco_eval = {"info": {"kept": True}, "images": [{"id": 1, "file_name": "competition-eval.png"}]}
    public, hidden = tmp_path / "public", tmp_path / "hidden"
    load_function(TASK, "prepare.py:_split")(public, hidden, labels, coco_train, coco_eval)

    shuffled = labels.sample(frac=1, random_state=42)
    train = pd.read_csv(public / "multilabel_classification" / "train.csv")
    assert list(train["id"]) == list(shuffled["id"][:98])
    answers = answers_of(hidden)
    assert list(answers["id"]) == list(shuffled["id"][98:])
    assert list(answers["categories"]) == [str(ids.index(i) % 7 + 1) for i in answers["id"]]
    train_json = read_json(public / "object_detection" / "train.json")
    eval_json = read_json(public / "object_detection" / "eval.json")
    assert [i["id"] for i in train_json["images"]] == list(range(1, 99))
    assert [a["id"] for a in train_json["annotations"]] == list(range(1, 99))
    by_number = {i["id"]: i["file_name"][:-4] for i in train_json["images"]}
    assert all(a["category_id"] == ids.index(by_number[a["image_id"]]) % 7 + 1 for a in train_json["annotations"])
    assert eval_json["info"] == {"kept": True}, "the rest of the competition's eval.json is kept"
    in_file_order = sorted(answers["id"], key=ids.index)  # eval.json lists them in train.json's order
    assert [(i["id"], i["file_name"][:-4]) for i in eval_json["images"]] == list(enumerate(in_file_order, start=1))


# --------------------------------------------------------------------------- metric.py and the grader


@functools.cache
def metric():
    """The shipped env/metric.py, imported once so that its exception class is one object."""
    spec = importlib.util.spec_from_file_location("fathomnet_metric_under_test", ASSETS / TASK / "env" / "metric.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def metric_function(name: str):
    return getattr(metric(), name)


def test_average_precision_as_the_competition_computes_it():
    apk = metric_function("apk")
    assert apk([1, 2], [1, 2]) == 1.0
    assert apk([1, 2], [3, 1, 2]) == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert apk([1], [1, 1, 1]) == 1.0 and apk([1], [1, 2, 1, 3, 1]) == 1.0
    assert apk([5], [1, 5, 5]) == pytest.approx(0.5)
    assert apk([1], [2] * 20 + [1]) == 0.0, "only the first 20 count"
    assert apk([1], []) == 0.0 and apk([], [1]) == 0.0


@pytest.mark.parametrize("text, ids", [
    ("1 146 10", [1, 146, 10]), ("[1.0, 9.0, 11.0]", [1, 9, 11]), ("[2, 4, 7]", [2, 4, 7]),
    ("  3   5 ", [3, 5]), ("[]", []), ("", []), (float("nan"), []),
])
def test_category_lists_are_read_in_the_documented_and_the_list_forms(text, ids):
    assert metric_function("category_ids")(text) == ids


def test_rescaled_auc_is_zero_when_one_class_is_all_there_is():
    rescaled_auc = metric_function("rescaled_auc")
    assert rescaled_auc([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0
    assert rescaled_auc([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1]) == -1.0
    assert rescaled_auc([0, 0, 1, 1], [0.5] * 4) == 0.0
    assert rescaled_auc([0, 0, 0], [0.1, 0.9, 0.3]) == 0.0


def grade(workspace, hidden):
    return grade_task(TASK, workspace, hidden)


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
    as_lists = SUBMITTED.assign(categories=["[2, 9, 1]", "[8, 3, 3]", "[4]", "[]"])  # as the starter writes them
    assert grade_by_hand(tmp_path, as_lists) == pytest.approx(7 / 12)


def test_perfect_submission_scores_one_and_constant_osd_scores_half_the_map(tmp_path):
    assert grade_by_hand(tmp_path, BY_HAND) == 1.0
    assert grade_by_hand(tmp_path, SUBMITTED.assign(osd=0.5)) == pytest.approx((0 + 5 / 12) / 2)  # sAUC = 0
    assert grade_by_hand(tmp_path, BY_HAND.assign(osd=1 - BY_HAND["osd"])) == pytest.approx((-1 + 1) / 2)


def test_when_every_image_is_in_sample_the_auc_part_is_zero(tmp_path):
    """As in both data variants (the test images are held-out training images): the AUC is
    undefined with one class; sAUC counts 0, the original's expected value with its random truth."""
    assert grade_by_hand(tmp_path, SUBMITTED, BY_HAND.assign(osd=0)) == pytest.approx(5 / 24)
    assert grade_by_hand(tmp_path, BY_HAND, BY_HAND.assign(osd=0)) == 0.5


def test_shipped_metric_scores_as_the_grader_does():
    score = metric_function("score")
    assert score(BY_HAND, SUBMITTED.iloc[::-1], row_id_column_name="id") == pytest.approx(7 / 12)
    error = metric_function("MetricError")
    with pytest.raises(error, match="exactly the solution's ids"):
        score(BY_HAND, SUBMITTED.iloc[:3], row_id_column_name="id")
    with pytest.raises(error, match="id c: categories must be integer"):
        score(BY_HAND, SUBMITTED.assign(categories=["1", "2", "four", "5"]), row_id_column_name="id")


def test_grader_uses_the_tasks_metric_not_the_workspaces(tmp_path):
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "metric.py").write_text("def score(*args, **kwargs):\n    return 1.0\n")
    assert grade_by_hand(tmp_path, SUBMITTED) == pytest.approx(7 / 12)


@pytest.mark.parametrize("corrupt, message", [
    (lambda f: f.drop(columns="osd"), "missing column 'osd'"),
    (lambda f: f.iloc[:-1], "rows; expected"),
    (lambda f: f.assign(osd=f["osd"].where(f.index != 3)), "column 'osd' has 1 missing, NaN"),
    (lambda f: pd.concat([f.iloc[:-1], f.iloc[:1]]), "duplicate id"),
    (lambda f: f.assign(categories="1 two"), "categories must be integer category ids"),
    (lambda f: f.assign(categories="1.5"), "categories must be integer category ids"),
    (lambda f: f.assign(id=f["id"].where(f.index != 0, "")), "empty"),
])
def test_grader_rejects_corrupted_submissions(data, tmp_path, corrupt, message):
    _, hidden = data
    corrupt(answers_of(hidden)).to_csv(tmp_path / "submission.csv", index=False)
    with pytest.raises(InvalidSubmission, match=message):
        grade(tmp_path, hidden)


# --------------------------------------------------------------------------- the scripts


def constants(script: str) -> dict:
    tree = ast.parse((ASSETS / TASK / script).read_text())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)}


def test_starter_keeps_the_originals_settings():
    source = (ASSETS / TASK / "env" / "train.py").read_text()
    assert {k: v for k, v in constants("env/train.py").items() if k != "SEED"} == {
        "N_CATEGORIES": 290, "SIZE": 256, "EPOCHS": 1, "BATCH_SIZE": 64, "THRESHOLD": 0.5, "IMAGE_DIR": "images/"}
    assert "random_state=20, test_size=0.3" in source
    assert 'test["file_name"][0]' in source, "every row is predicted from the first test image, as in the original"
    assert '"osd": [1] * len(ids)' in source


@pytest.mark.slow
@pytest.mark.parametrize("reference", [False, True], ids=["starter", "reference"])
def test_scripts_run_on_images_of_many_sizes(data, tmp_path, reference):
    """The competition's images come in many sizes; the scripts resize them while loading."""
    public, _ = data
    workspace = make_workspace(TASK, public, tmp_path / "workspace", reference=reference)
    train_csv = workspace / "multilabel_classification" / "train.csv"
    pd.read_csv(train_csv).head(40).to_csv(train_csv, index=False)
    eval_json = workspace / "object_detection" / "eval.json"
    coco = read_json(eval_json)
    coco["images"] = coco["images"][:8]
    eval_json.write_text(json.dumps(coco))
    for n, path in enumerate(sorted((workspace / "images").iterdir())):
        with Image.open(path) as image:
            resized = image.resize((40 + 17 * (n % 5), 30 + 23 * (n % 3)))
        resized.save(path)
    run_script(workspace)
    submission = pd.read_csv(workspace / "submission.csv")
    assert list(submission["id"]) == [i["file_name"][:-4] for i in coco["images"]]
    if not reference:  # the original's output: one Python list of ids for every row, osd 1
        assert submission["categories"].nunique() == 1 and submission["categories"][0].startswith("[")
        assert set(submission["osd"]) == {1}


# --------------------------------------------------------------------------- full recipe

COMPETITION_IMAGES = 100


def competition_files(data, dest):
    """The competition's files (training part) for the first 100 mini training images; the mini
    eval.json stands for the competition's."""
    public, _ = data
    (dest / "images").mkdir(parents=True)
    (dest / "multilabel_classification").mkdir()
    (dest / "object_detection").mkdir()
    shutil.copy2(public / "category_key.csv", dest / "category_key.csv")
    shutil.copy2(public / "object_detection" / "eval.json", dest / "object_detection" / "eval.json")
    labels = pd.read_csv(public / "multilabel_classification" / "train.csv").head(COMPETITION_IMAGES)
    labels.to_csv(dest / "multilabel_classification" / "train.csv", index=False)
    coco = read_json(public / "object_detection" / "train.json")
    names = {f"{i}.png" for i in labels["id"]}
    images = [i for i in coco["images"] if i["file_name"] in names]
    numbers = {i["id"] for i in images}
    coco.update(images=images, annotations=[a for a in coco["annotations"] if a["image_id"] in numbers])
    (dest / "object_detection" / "train.json").write_text(json.dumps(coco))
    for name in names:
        shutil.copy2(public / "images" / name, dest / "images" / name)
    return dest


def test_full_recipe_holds_out_the_last_two_percent_of_the_shuffled_training_images(data, tmp_path, monkeypatch):
    source = competition_files(data, tmp_path / "source")
    fake_kaggle(monkeypatch, {COMPETITION: source})
    public, hidden = tmp_path / "public", tmp_path / "hidden"
    load_function(TASK, "prepare.py:full")(public, hidden, 0, tmp_path / "downloads")
    original = pd.read_csv(source / "multilabel_classification" / "train.csv")
    shuffled = original.sample(frac=1, random_state=42)
    train = pd.read_csv(public / "multilabel_classification" / "train.csv")
    answers = answers_of(hidden)
    assert list(train["id"]) == list(shuffled["id"][:98]) and set(answers["id"]) == set(shuffled["id"][98:])
    assert set(answers["osd"]) == {0}
    truth = original.set_index("id").loc[answers["id"], "categories"]
    assert [" ".join(str(int(c)) for c in ast.literal_eval(v)) for v in truth] == list(answers["categories"])
    coco_eval = read_json(public / "object_detection" / "eval.json")
    assert sorted(i["file_name"][:-4] for i in coco_eval["images"]) == sorted(answers["id"])
    coco_train = read_json(public / "object_detection" / "train.json")
    assert len(coco_train["images"]) == 98 and {a["image_id"] for a in coco_train["annotations"]} <= set(range(1, 99))
    assert sorted(p.name for p in (public / "images").iterdir()) == sorted(f"{i}.png" for i in original["id"])
    # the held-out answers themselves: MAP@20 = 1, sAUC = 0 (every test image is in sample)
    answers.to_csv(tmp_path / "submission.csv", index=False)
    assert grade(tmp_path, hidden) == 0.5


def test_full_recipe_fetches_images_from_their_urls_when_the_bundle_has_none(data, tmp_path, monkeypatch):
    source = competition_files(data, tmp_path / "source")
    shutil.move(source / "images", tmp_path / "served")
    coco_path = source / "object_detection" / "train.json"
    with FileServer(tmp_path / "served") as server:
        coco = read_json(coco_path)
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


def test_full_recipe_needs_the_competitions_eval_json(data, tmp_path, monkeypatch):
    source = competition_files(data, tmp_path / "source")
    (source / "object_detection" / "eval.json").unlink()
    fake_kaggle(monkeypatch, {COMPETITION: source})
    with pytest.raises(DataError, match="eval.json is missing"):
        load_function(TASK, "prepare.py:full")(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")


def test_sample_submission_is_a_valid_submission(data, tmp_path):
    public, hidden = data
    shutil.copy2(public / "sample_submission.csv", tmp_path / "submission.csv")
    assert 0.0 <= grade(tmp_path, hidden) <= 0.5

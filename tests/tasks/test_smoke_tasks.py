"""Offline checks of the three smoke tasks' assets (task_assets/<task>/ and specs/tasks/<task>.yaml).

The helpers in tests/tasks/support.py prepare the data, build a workspace (env/ + public data), run
``python train.py`` in it and grade it: by calling the task's grader directly, or, for a task
whose grader needs the agent's code run, through the harness's grading path (see ``grade``).
"""

from __future__ import annotations

import json
import pathlib
import re
import textwrap

import numpy as np
import pandas as pd
import pytest

from pytest_mlab.task_api import InvalidSubmission
from tests.tasks.support import (ASSETS, ROOT, SEED, grade, load_function, load_spec, make_workspace, prepare,
                                 run_script, task_spec, tree_digest)

SCHEMA = ROOT / "pytest_mlab" / "schemas" / "task.schema.json"
TASKS = ["vectorization", "diabetes", "digits"]


# --------------------------------------------------------------------------- helpers


def improvement(task: str, score: float, baseline: float) -> float:
    """Relative improvement over the baseline, positive when better, whatever the direction."""
    sign = 1.0 if load_spec(task)["metric"]["direction"] == "maximize" else -1.0
    return sign * (score - baseline) / abs(baseline)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    """Per task: (public, hidden) prepared once with the harness seed."""
    cache: dict[str, tuple[pathlib.Path, pathlib.Path]] = {}

    def get(task: str) -> tuple[pathlib.Path, pathlib.Path]:
        if task not in cache:
            cache[task] = prepare(task, tmp_path_factory.mktemp(f"{task}-data"))
        return cache[task]

    return get


@pytest.fixture(scope="module")
def runs(prepared, tmp_path_factory):
    """Per (task, reference?): run the script once in a fresh workspace; (score, seconds, stdout)."""
    cache: dict[tuple[str, bool], tuple[float, float, str]] = {}

    def get(task: str, reference: bool) -> tuple[float, float, str]:
        key = (task, reference)
        if key not in cache:
            public, hidden = prepared(task)
            label = "reference" if reference else "starter"
            workspace = make_workspace(task, public, tmp_path_factory.mktemp(f"{task}-{label}") / "ws",
                                       reference=reference)
            stdout, seconds = run_script(workspace, load_spec(task).get("starter", "train.py"))
            cache[key] = (grade(task, workspace, hidden), seconds, stdout)
        return cache[key]

    return get


# --------------------------------------------------------------------------- specs and assets


@pytest.mark.parametrize("task", TASKS)
def test_spec_matches_schema_and_assets(task):
    spec = load_spec(task)
    assert spec["kind"] == "Task" and spec["name"] == task
    assert spec["assets"] == f"task_assets/{task}"
    if SCHEMA.is_file():
        jsonschema = pytest.importorskip("jsonschema")
        jsonschema.validate(spec, json.loads(SCHEMA.read_text()))
    assert callable(load_function(task, spec["data"]["mini"]["prepare"]))
    assert callable(load_function(task, spec["metric"]["grader"]))
    assets = ASSETS / task
    # vectorization's original ships train.py alone; its rules are in train.py's opening comment
    described = () if task == "vectorization" else ("data_description.txt", "evaluation_details.txt")
    for name in (spec["starter"], *described):
        assert (assets / "env" / name).is_file(), f"env/{name} missing"
    assert (assets / "reference" / spec["reference"]["script"]).is_file()
    assert spec["metric"]["direction"] == {"vectorization": "minimize", "diabetes": "minimize",
                                           "digits": "maximize"}[task]
    built = task_spec(task)
    assert built.baseline["mini"] > 0 and built.tolerance("mini") > 0


@pytest.mark.parametrize("task", TASKS)
def test_prepare_is_deterministic(task, tmp_path):
    first = [tree_digest(p) for p in prepare(task, tmp_path / "a")]
    second = [tree_digest(p) for p in prepare(task, tmp_path / "b")]
    assert first == second
    assert first[1], "prepare.mini wrote no hidden answers"
    if task != "vectorization":
        other = [tree_digest(p) for p in prepare(task, tmp_path / "c", seed=1)]
        assert other != first, "the seed should change the split"


@pytest.mark.parametrize("task", TASKS)
def test_hidden_answers_are_not_public(task, prepared):
    public, hidden = prepared(task)
    public_files = {p.relative_to(public): p.read_bytes() for p in public.rglob("*") if p.is_file()}
    hidden_files = {p.relative_to(hidden): p.read_bytes() for p in hidden.rglob("*") if p.is_file()}
    assert not set(public_files) & set(hidden_files)
    assert not set(public_files.values()) & set(hidden_files.values())
    env_names = {p.name for p in (ASSETS / task / "env").rglob("*")}
    assert not env_names & {p.name for p in hidden_files}

    if task == "vectorization":
        assert not public_files  # the agent gets no data; the grader's batch stays hidden
    elif task == "diabetes":
        answers = pd.read_csv(hidden / "answers.csv")
        test = pd.read_csv(public / "test.csv")
        train = pd.read_csv(public / "train.csv")
        assert list(answers.columns) == ["id", "target"]
        assert "target" not in test.columns and "target" in train.columns
        assert sorted(answers["id"]) == sorted(test["id"])
        assert not set(train["id"]) & set(test["id"])
        assert len(train) + len(test) == 442
    else:
        answers = pd.read_csv(hidden / "answers.csv")
        with np.load(public / "test.npz") as test, np.load(public / "train.npz") as train:
            assert sorted(test.files) == ["ids", "images"]
            assert sorted(train.files) == ["ids", "images", "labels"]
            assert train["images"].dtype == np.uint8 and train["images"].shape[1:] == (8, 8)
            assert train["images"].max() == 16 and train["labels"].dtype == np.int64
            assert sorted(answers["id"]) == sorted(test["ids"].tolist())
            assert not set(train["ids"].tolist()) & set(test["ids"].tolist())
            assert len(train["ids"]) + len(test["ids"]) == 1797


# --------------------------------------------------------------------------- baseline and reference


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_starter_reproduces_recorded_baseline(task, runs):
    built = task_spec(task)
    score, seconds, stdout = runs(task, reference=False)
    baseline, tolerance = built.baseline["mini"], built.tolerance("mini")
    assert abs(score - baseline) <= tolerance * abs(baseline), (
        f"starter scored {score:.6g}; spec records baseline {baseline} +/- {tolerance:.0%}\n{stdout}")


@pytest.mark.slow
@pytest.mark.parametrize("task", TASKS)
def test_reference_beats_baseline(task, runs):
    spec = load_spec(task)
    baseline, _, _ = runs(task, reference=False)
    score, seconds, stdout = runs(task, reference=True)
    required = spec["success"]["improvement"]
    for against in (baseline, task_spec(task).baseline["mini"]):
        gain = improvement(task, score, against)
        assert gain > required, (f"reference scored {score:.6g} vs baseline {against:.6g}: "
                                 f"{gain:+.1%}, needs > {required:.0%}\n{stdout}")


@pytest.mark.slow
def test_digits_reference_accuracy_above_90_percent(runs):
    score, _, _ = runs("digits", reference=True)
    assert score > 0.9


# --------------------------------------------------------------------------- tabular submissions

TABULAR = {
    # task: (value columns, test file named in messages)
    "diabetes": (["target"], "test.csv"),
    "digits": ([str(c) for c in range(10)], "test.npz"),
}


def valid_submission(task: str, hidden: pathlib.Path) -> pd.DataFrame:
    """A well-formed submission whose per-row quality varies (so misalignment would show)."""
    answers = pd.read_csv(hidden / "answers.csv")
    rng = np.random.default_rng(123)
    if task == "diabetes":
        return pd.DataFrame({"id": answers["id"],
                             "target": answers["target"] + rng.normal(0.0, 40.0, len(answers))})
    probabilities = rng.dirichlet(np.ones(10), size=len(answers))
    correct = rng.random(len(answers)) < 0.7
    rows = np.flatnonzero(correct)
    probabilities[rows, answers["label"].to_numpy()[rows]] += 1.0
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    frame = pd.DataFrame(probabilities, columns=[str(c) for c in range(10)])
    frame.insert(0, "id", answers["id"])
    return frame


def expected_score(task: str, hidden: pathlib.Path, submission: pd.DataFrame) -> float:
    answers = pd.read_csv(hidden / "answers.csv")
    merged = answers.merge(submission, on="id", suffixes=("", "_predicted"))
    if task == "diabetes":
        return float((merged["target"] - merged["target_predicted"]).abs().mean())
    return float((merged[[str(c) for c in range(10)]].to_numpy().argmax(axis=1) == merged["label"]).mean())


def grade_frame(task: str, hidden: pathlib.Path, workspace: pathlib.Path, frame: pd.DataFrame) -> float:
    workspace.mkdir(exist_ok=True)
    frame.to_csv(workspace / "submission.csv", index=False)
    return grade(task, workspace, hidden)


@pytest.mark.parametrize("task", list(TABULAR))
def test_valid_submission_scores_as_expected(task, prepared, tmp_path):
    _, hidden = prepared(task)
    frame = valid_submission(task, hidden)
    assert grade_frame(task, hidden, tmp_path, frame) == pytest.approx(expected_score(task, hidden, frame))


@pytest.mark.parametrize("task", list(TABULAR))
def test_rows_are_aligned_by_id(task, prepared, tmp_path):
    _, hidden = prepared(task)
    frame = valid_submission(task, hidden)
    score = grade_frame(task, hidden, tmp_path / "ordered", frame)
    shuffled = frame.sample(frac=1.0, random_state=7).reset_index(drop=True)
    assert not shuffled["id"].equals(frame["id"])
    assert grade_frame(task, hidden, tmp_path / "shuffled", shuffled) == pytest.approx(score, abs=1e-12)
    # The same values under permuted ids are a different submission: the check above is not vacuous.
    relabelled = frame.assign(id=shuffled["id"].to_numpy())
    assert grade_frame(task, hidden, tmp_path / "relabelled", relabelled) != pytest.approx(score)


def _drop_column(frame, column):
    return frame.drop(columns=[column])


CORRUPTIONS = {
    # name: (corrupt(frame, value_column) -> frame, message pattern (format keys: col, cols, n, test))
    "missing column": (
        _drop_column,
        "submission.csv: missing column '{col}'; expected columns: {cols}"),
    "wrong row count": (
        lambda f, c: f.iloc[:-1],
        "submission.csv: has {n_minus_1} rows; expected {n} (one per id in {test})"),
    "NaN value": (
        lambda f, c: f.assign(**{c: f[c].where(f.index != 3)}),
        "submission.csv: column '{col}' has 1 missing, NaN or infinite value (id {id3})"),
    "infinite value": (
        lambda f, c: f.assign(**{c: f[c].where(f.index != 3, np.inf)}),
        "submission.csv: column '{col}' has 1 missing, NaN or infinite value (id {id3})"),
    "duplicate id": (
        lambda f, c: f.assign(id=f["id"].where(f.index != 3, f["id"].iloc[0])),
        "submission.csv: duplicate id {id0}; no row for id {id3}; expected each id in {test} exactly once"),
    "unknown id": (
        lambda f, c: f.assign(id=f["id"].where(f.index != 3, 999999)),
        "submission.csv: id not in {test}: 999999; no row for id {id3}"),
    "non-integer id": (
        lambda f, c: f.assign(id=f["id"].astype(str).where(f.index != 3, "abc")),
        "submission.csv: column 'id' must hold integer ids from {test}; found 'abc'"),
    "text value": (
        lambda f, c: f.assign(**{c: f[c].astype(str).where(f.index != 3, "high")}),
        "submission.csv: column '{col}' must be numeric; found 'high' for id {id3}"),
    "empty value": (
        lambda f, c: f.astype(str).assign(**{c: f[c].astype(str).where(f.index != 3, "")}),
        "submission.csv: column '{col}' has 1 missing, NaN or infinite value (id {id3})"),
    "index written": (
        lambda f, c: f.reset_index(),
        "submission.csv: unexpected column 'index'; expected columns: {cols}"),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
@pytest.mark.parametrize("task", list(TABULAR))
def test_corrupted_submission_is_rejected(task, corruption, prepared, tmp_path):
    _, hidden = prepared(task)
    columns, test_file = TABULAR[task]
    frame = valid_submission(task, hidden)
    corrupt, pattern = CORRUPTIONS[corruption]
    column = columns[-1]
    message = pattern.format(col=column, cols=", ".join(["id"] + columns), n=len(frame),
                             n_minus_1=len(frame) - 1, test=test_file,
                             id0=frame["id"].iloc[0], id3=frame["id"].iloc[3])
    with pytest.raises(InvalidSubmission, match=re.escape(message)):
        grade_frame(task, hidden, tmp_path, corrupt(frame, column))


@pytest.mark.parametrize("task", list(TABULAR))
def test_missing_empty_or_garbled_file_is_rejected(task, prepared, tmp_path):
    _, hidden = prepared(task)
    with pytest.raises(InvalidSubmission, match=r"submission\.csv: file not found in the workspace"):
        grade(task, tmp_path, hidden)
    (tmp_path / "submission.csv").write_text("")
    with pytest.raises(InvalidSubmission, match=r"submission\.csv: file is empty"):
        grade(task, tmp_path, hidden)
    (tmp_path / "submission.csv").write_text("id,target\n1,2,3,4\n")
    with pytest.raises(InvalidSubmission, match=r"submission\.csv: "):
        grade(task, tmp_path, hidden)


def test_vectorization_line_references_match_the_starter():
    """The spec points the agent at the loops of forward in env/train.py, by line number."""
    lines = (ASSETS / "vectorization" / "env" / "train.py").read_text().splitlines()
    assert lines[92 - 1].strip().startswith("def forward(")
    assert lines[106 - 1].strip().startswith("# The loops below")
    assert lines[122 - 1].strip() == "image_portion, kernel_matrix, bias)"
    assert lines[123 - 1].strip() == ""
    assert "lines 106-122" in load_spec("vectorization")["description"]


def test_vectorization_workload_is_the_originals(tmp_path):
    """``full`` holds the original's case (MLAgentBench's vectorization train.py: a (32, 64, 64, 3)
    batch, Conv2DLayer(3, 8, 3, 2, 2, 'relu')), as the starter's main() times it; ``mini`` a batch
    of MINI_BATCH images with the same layer (docs/fidelity.md). Only the configuration is
    prepared: the inputs are drawn at grading, so nothing of them is in the data, for any seed."""
    spec = load_spec("vectorization")
    configs = {}
    for variant in ("mini", "full"):
        public, hidden = tmp_path / variant / "public", tmp_path / variant / "hidden"
        load_function("vectorization", spec["data"][variant]["prepare"])(public, hidden, SEED)
        assert sorted(path.name for path in hidden.iterdir()) == ["conv_config.json"] and not list(public.iterdir())
        configs[variant] = json.loads((hidden / "conv_config.json").read_text())
    mini_batch = load_function("vectorization", "prepare.py:MINI_BATCH")
    layer = {"num_filters": 8, "kernel_size": 3, "stride": 2, "padding": 2, "activation": "relu"}
    assert configs["full"] == {"batch_shape": [32, 64, 64, 3], **layer}
    assert configs["mini"] == {"batch_shape": [mini_batch, 64, 64, 3], **layer}
    assert spec["metric"]["measure"]["inputs"] == ["conv_config.json"]
    source = (ASSETS / "vectorization" / "env" / "train.py").read_text()
    assert "BATCH_SHAPE = (32, 64, 64, 3)" in source
    assert all(f"{name} = {value}" in source for name, value in
               [("NUM_FILTERS", 8), ("KERNEL_SIZE", 3), ("STRIDE", 2), ("PADDING", 2)])
    assert spec["baseline"]["full"] == spec["baseline"]["mini"] == 1.0
    assert (spec["limits"]["max_steps"], spec["limits"]["max_time"]) == (50, "5h")


def test_extra_dataframe_index_gets_a_hint(prepared, tmp_path):
    _, hidden = prepared("diabetes")
    valid_submission("diabetes", hidden).to_csv(tmp_path / "submission.csv")  # index=True
    with pytest.raises(InvalidSubmission, match=r"unexpected column 'Unnamed: 0'.*index=False"):
        grade("diabetes", tmp_path, hidden)


def test_digits_missing_class_column_is_rejected(prepared, tmp_path):
    _, hidden = prepared("digits")
    frame = valid_submission("digits", hidden).drop(columns=["7"])
    with pytest.raises(InvalidSubmission, match=re.escape(
            "submission.csv: missing column '7'; expected columns: id, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9")):
        grade_frame("digits", hidden, tmp_path, frame)


def test_digits_negative_probability_is_rejected(prepared, tmp_path):
    _, hidden = prepared("digits")
    frame = valid_submission("digits", hidden)
    frame.loc[5, "2"] = -0.5
    with pytest.raises(InvalidSubmission, match=re.escape(
            f"probabilities must be non-negative; 1 row has a negative value (e.g. id {frame['id'][5]}, "
            f"column '2': -0.5)")):
        grade_frame("digits", hidden, tmp_path, frame)


# --------------------------------------------------------------------------- vectorization grader

REFERENCE_TRAIN = ASSETS / "vectorization" / "reference" / "train.py"


def vectorization_workspace(tmp_path: pathlib.Path, source: str | None) -> pathlib.Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    if source is not None:
        (workspace / "train.py").write_text(source)
    return workspace


@pytest.mark.slow
def test_vectorization_reference_is_accepted_and_self_report_ignored(prepared, tmp_path):
    _, hidden = prepared("vectorization")
    workspace = vectorization_workspace(tmp_path, REFERENCE_TRAIN.read_text())
    (workspace / "submission.csv").write_text("run_time\n0.0\n")
    assert 0 < grade("vectorization", workspace, hidden, rounds=1) < 1
    assert sorted(p.name for p in workspace.iterdir()) == ["submission.csv", "train.py"]  # no __pycache__


@pytest.mark.slow
def test_vectorization_timer_cannot_be_patched_by_train_py(prepared, tmp_path):
    _, hidden = prepared("vectorization")
    source = REFERENCE_TRAIN.read_text() + "\ntime.perf_counter = lambda: 0.0\ntime.time = lambda: 0.0\ntime.process_time = lambda: 0.0\n"
    assert grade("vectorization", vectorization_workspace(tmp_path, source), hidden, rounds=1) > 0


WRONG_OUTPUTS = {
    "off by a constant": REFERENCE_TRAIN.read_text().replace(
        "        if self.activation == \"relu\":\n            return relu(output)",
        "        output += 1e-3\n        if self.activation == \"relu\":\n            return relu(output)"),
    "no activation": REFERENCE_TRAIN.read_text().replace(
        "            return relu(output)", "            return output"),
    "wrong shape": textwrap.dedent("""
        import numpy as np
        class Conv2DLayer:
            def __init__(self, *args):
                pass
            def forward(self, features_batch):
                return np.zeros(features_batch.shape)
        """),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(WRONG_OUTPUTS))
def test_vectorization_wrong_output_is_rejected(case, prepared, tmp_path):
    _, hidden = prepared("vectorization")
    source = WRONG_OUTPUTS[case]
    assert source != REFERENCE_TRAIN.read_text()
    with pytest.raises(InvalidSubmission, match="forward output differs from the original loops' output"):
        grade("vectorization", vectorization_workspace(tmp_path, source), hidden, rounds=1)


BROKEN_SOURCES = {
    "missing train.py": (None, "train.py was not written"),
    "missing class": (REFERENCE_TRAIN.read_text().replace("class Conv2DLayer", "class ConvLayer"),
                      "train.py: defines no class Conv2DLayer"),
    "import error": ("import numpy as np\nraise RuntimeError('boom at import')\n",
                     "train.py: importing the module raised RuntimeError: boom at import"),
    "syntax error": ("def broken(:\n", "train.py: importing the module raised SyntaxError"),
    "exception in forward": (
        REFERENCE_TRAIN.read_text().replace(
            "        padding_size = self.padding if isinstance(self.padding, int) else 0\n        batch_size",
            "        raise ValueError('boom in forward')\n        batch_size"),
        "train.py: Conv2DLayer.forward raised ValueError: boom in forward"),
    "incompatible constructor": (
        REFERENCE_TRAIN.read_text().replace("stride: int, padding: int | None,", "stride: int,"),
        "train.py: Conv2DLayer(3, 8, 3, 2, 2, 'relu') (then setting .kernel_matrices and .biases) raised "
        "TypeError"),
    "sys.exit at import": ("import sys\nsys.exit(3)\n", "train.py: importing the module raised SystemExit: 3"),
    "process killed": ("import os\nos._exit(3)\n", "exited with status 3 before reporting a result"),
    "forward returns non-array": (
        "class Conv2DLayer:\n    def __init__(self, *args):\n        pass\n"
        "    def forward(self, features_batch):\n        return object()\n",
        "Conv2DLayer.forward must return a numeric numpy array"),
}


@pytest.mark.parametrize("case", list(BROKEN_SOURCES))
def test_vectorization_broken_train_py_is_rejected(case, prepared, tmp_path):
    _, hidden = prepared("vectorization")
    source, message = BROKEN_SOURCES[case]
    assert source != REFERENCE_TRAIN.read_text()  # each edit of the reference took effect
    with pytest.raises(InvalidSubmission, match=re.escape(message)):
        grade("vectorization", vectorization_workspace(tmp_path, source), hidden)

"""Grader for the fathomnet task: the competition's score, (sAUC + MAP@20) / 2, computed by the
task's own env/metric.py (the copy shipped with the task, never the one in the workspace), as
the original benchmark's evaluator imports its env/metric.py.

submission.csv has one row per test image (object_detection/eval.json): ``id`` (the image's
file_name without .png), ``categories`` (category ids, most likely first; the first 20 count) and
``osd`` (how likely the image is out of sample). Rows are matched by id. Every test image is a
held-out training image, so all are in sample and the sAUC term is 0 (see metric.rescaled_auc).
"""

from __future__ import annotations

import importlib.util
import pathlib
from types import ModuleType

import pandas as pd

from pytest_mlab.task_api import InvalidSubmission, read_submission

SUBMISSION = "submission.csv"


def load_metric() -> ModuleType:
    """env/metric.py of this task folder, imported by path (it is not a package module)."""
    path = pathlib.Path(__file__).resolve().parent / "env" / "metric.py"
    spec = importlib.util.spec_from_file_location("fathomnet_metric", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    metric = load_metric()
    truth = pd.read_csv(pathlib.Path(answers) / "answers.csv", dtype={"id": str, "categories": str},
                        keep_default_na=False)
    submission = read_submission(pathlib.Path(workspace) / SUBMISSION, ["id", "categories", "osd"],
                                 pd.Index(truth["id"]), "object_detection/eval.json", text_ids=True,
                                 text_columns=("categories",))
    try:
        return metric.score(truth, submission.reset_index(), row_id_column_name="id")
    except metric.MetricError as error:
        raise InvalidSubmission(f"{SUBMISSION}: {error}") from None

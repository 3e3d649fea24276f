"""A small tabular task in MLAgentBench's folder layout, written by the tests that need one.

scripts/prepare.py asks for consent with input(), then writes train.csv and test.csv into ../env
and answer.csv beside itself; env/train.py predicts the mean (the baseline); scripts/eval.py's
get_score reads submission.csv and answer.csv and returns the mean absolute error. The reference
solution fits the linear relation the data follows. Plain Python, so every script starts at once.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import textwrap
from pathlib import Path

PROBLEM = ("Read data_description.txt, then fill in train.py to predict y for the rows of test.csv. "
           "Write the predictions to submission.csv with columns id and y. Never read the csv files yourself.\n")

PREPARE = '''\
import csv
import random

input("Consent to the data's terms; press enter")
rng = random.Random(7)
rows = []
for index in range(400):
    a, b = rng.uniform(-5, 5), rng.uniform(-5, 5)
    rows.append((index, round(a, 4), round(b, 4), round(3 * a - 2 * b + 10 + rng.gauss(0, 0.5), 4)))
train, test = rows[:300], rows[300:]
with open("../env/train.csv", "w", newline="") as out:
    csv.writer(out).writerows([("id", "a", "b", "y"), *train])
with open("../env/test.csv", "w", newline="") as out:
    csv.writer(out).writerows([("id", "a", "b"), *(row[:3] for row in test)])
with open("answer.csv", "w", newline="") as out:
    csv.writer(out).writerows([("id", "y"), *((row[0], row[3]) for row in test)])
print("prepared", len(train), "training rows")
'''

EVAL = '''\
import csv
import os
import sys

sys.path.append("../env")


def get_score(submission_folder="../env"):
    with open(os.path.join(submission_folder, "submission.csv")) as handle:
        predicted = {row["id"]: float(row["y"]) for row in csv.DictReader(handle)}
    with open(os.path.join(os.path.dirname(__file__), "answer.csv")) as handle:
        truth = {row["id"]: float(row["y"]) for row in csv.DictReader(handle)}
    return sum(abs(predicted[key] - value) for key, value in truth.items()) / len(truth)
'''

STARTER = '''\
import csv

with open("train.csv") as handle:
    train = list(csv.DictReader(handle))
with open("test.csv") as handle:
    test = list(csv.DictReader(handle))
mean = sum(float(row["y"]) for row in train) / len(train)
with open("submission.csv", "w", newline="") as out:
    writer = csv.writer(out)
    writer.writerow(["id", "y"])
    writer.writerows([row["id"], mean] for row in test)
print("predicted the mean", mean)
'''

REFERENCE = '''\
import csv

import numpy as np

with open("train.csv") as handle:
    train = list(csv.DictReader(handle))
with open("test.csv") as handle:
    test = list(csv.DictReader(handle))
features = np.array([[float(row["a"]), float(row["b"]), 1.0] for row in train])
weights = np.linalg.lstsq(features, np.array([float(row["y"]) for row in train]), rcond=None)[0]
with open("submission.csv", "w", newline="") as out:
    writer = csv.writer(out)
    writer.writerow(["id", "y"])
    for row in test:
        writer.writerow([row["id"], float(np.dot([float(row["a"]), float(row["b"]), 1.0], weights))])
'''

BASELINE_MAE = 9.3573  # the starter's score on this data (predicting the training mean)


def write_folder(folder: Path, **replace: str | None) -> Path:
    """The task folder at ``folder``; ``replace`` maps a file (``scripts/eval.py``) to new content, or
    to None to leave it out."""
    files = {
        "env/train.py": STARTER,
        "env/data_description.txt": "Each row has two features, a and b, and the target y.\n",
        "scripts/research_problem.txt": PROBLEM,
        "scripts/read_only_files.txt": "./train.csv\n./test.csv\n./data_description.txt\n",
        "scripts/prepare.py": PREPARE,
        "scripts/eval.py": EVAL,
    }
    files.update(replace)
    for relative, text in files.items():
        if text is not None:
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
    return folder


def write_reference(folder: Path) -> Path:
    """The reference solution, in ``folder``/reference/train.py."""
    (folder / "reference").mkdir(parents=True, exist_ok=True)
    (folder / "reference" / "train.py").write_text(REFERENCE)
    return folder


def tar_folder(folder: Path, archive: Path, inside: str) -> str:
    """``folder`` packed as ``inside/...`` in a .tar.gz at ``archive``; returns its SHA-256."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        bundle.add(folder, arcname=inside)
    archive.write_bytes(buffer.getvalue())
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def spec(name: str, source: str, *, baseline: float | None = BASELINE_MAE, extra: str = "") -> str:
    """A Task spec for the folder; ``source``: the lines under ``mlagentbench:``, indented."""
    lines = [f"kind: Task\nname: {name}\nmlagentbench:\n{source.rstrip()}",
             "metric: {name: mae, direction: minimize, submission: submission.csv}"]
    if baseline is not None:
        lines.append(f"baseline: {{full: {baseline}, tolerance: 0.01}}")
    return "\n".join(lines) + "\n" + extra

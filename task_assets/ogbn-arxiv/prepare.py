"""Data for the ogbn-arxiv task, in OGB's raw on-disk layout under networks/ (the root the original
uses), so that ``PygNodePropPredDataset(name="ogbn-arxiv", root="networks")`` processes it offline
without downloading.

public/networks/ogbn_arxiv/RELEASE_v1.txt
public/networks/ogbn_arxiv/raw/{edge,node-feat,node-label,node_year,num-node-list,num-edge-list}.csv.gz
public/networks/ogbn_arxiv/split/time/{train,valid,test}.csv.gz
public/networks/ogbn_arxiv/mapping/{labelidx2arxivcategeory,nodeidx2paperid}.csv.gz
hidden/answers.csv   id (node index), label (the test nodes' subject areas)

The test nodes' labels in node-label.csv.gz are replaced by -1; only hidden/answers.csv has them.
``mini`` generates a small citation graph (papers cite mostly papers of their own subject area;
features are noisy per-area centroids; the areas are unevenly sized, a few large and many small,
as on arXiv) from the seed, with OGB's time split (train: before 2018,
valid: 2018, test: 2019 onwards). ``full`` downloads OGB's arxiv.zip and hides the test labels.
"""

from __future__ import annotations

import io
import pathlib
import shutil
import zipfile

import numpy as np
import pandas as pd

DIR = "networks/ogbn_arxiv"
URL = "http://snap.stanford.edu/ogb/data/nodeproppred/arxiv.zip"
SHA256: str | None = None  # OGB publishes no checksum; the zip's own CRCs are checked
SIZE: int | None = None  # not published either; a cut download fails the zip checks below
NUM_CLASSES = 40
MINI_NODES = 10000  # enough training papers for several 1,024-paper steps per epoch
MINI_FEATURES = 128
GZIP = {"method": "gzip", "mtime": 0}  # fixed header timestamp: same seed, same bytes


def _write(frame: pd.DataFrame | np.ndarray, path: pathlib.Path, **kwargs) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(frame).to_csv(path, header=False, index=False, compression=GZIP, **kwargs)


def _hide_test_labels(root: pathlib.Path, hidden: pathlib.Path) -> None:
    """Move the test nodes' labels from raw/node-label.csv.gz into hidden/answers.csv."""
    labels_path = root / "raw" / "node-label.csv.gz"
    labels = pd.read_csv(labels_path, header=None)[0].to_numpy()
    test = pd.read_csv(root / "split" / "time" / "test.csv.gz", header=None)[0].to_numpy()
    hidden.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"id": test, "label": labels[test].astype(np.int64)}).to_csv(hidden / "answers.csv", index=False)
    labels = labels.astype(np.int64)
    labels[test] = -1
    labels_path.unlink()
    _write(labels, labels_path)


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    root = pathlib.Path(public) / DIR
    rng = np.random.default_rng(seed)
    n = MINI_NODES
    area_weights = 1.0 / np.arange(1, NUM_CLASSES + 1)
    labels = rng.choice(NUM_CLASSES, size=n, p=area_weights / area_weights.sum())
    years = np.sort(rng.choice(np.arange(1995, 2021), size=n, p=np.linspace(1, 6, 26) / np.linspace(1, 6, 26).sum()))
    centroids = rng.normal(0.0, 1.0, size=(NUM_CLASSES, MINI_FEATURES))
    features = 0.05 * (centroids[labels] * 0.35 + rng.normal(0.0, 1.0, size=(n, MINI_FEATURES)))

    sources, targets = [], []
    by_class = [np.flatnonzero(labels == c) for c in range(NUM_CLASSES)]
    for node in range(n):
        for _ in range(rng.integers(2, 9)):
            pool = by_class[labels[node]] if rng.random() < 0.75 else np.arange(n)
            cited = int(rng.choice(pool))
            if cited != node:
                sources.append(node)
                targets.append(cited)
    edges = np.unique(np.stack([sources, targets], axis=1), axis=0)

    (root / "raw").mkdir(parents=True, exist_ok=True)
    _write(edges, root / "raw" / "edge.csv.gz")
    _write(features, root / "raw" / "node-feat.csv.gz", float_format="%.6f")
    _write(labels, root / "raw" / "node-label.csv.gz")
    _write(years, root / "raw" / "node_year.csv.gz")
    _write([n], root / "raw" / "num-node-list.csv.gz")
    _write([len(edges)], root / "raw" / "num-edge-list.csv.gz")
    for name, mask in (("train", years < 2018), ("valid", years == 2018), ("test", years >= 2019)):
        _write(np.flatnonzero(mask), root / "split" / "time" / f"{name}.csv.gz")
    _write(pd.DataFrame({"label idx": range(NUM_CLASSES),
                         "arxiv category": [f"arxiv cs {chr(97 + c // 26)}{chr(97 + c % 26)}" for c in range(NUM_CLASSES)]}),
           root / "mapping" / "labelidx2arxivcategeory.csv.gz")
    _write(pd.DataFrame({"node idx": range(n), "paper id": rng.choice(10**9, size=n, replace=False)}),
           root / "mapping" / "nodeidx2paperid.csv.gz")
    (root / "RELEASE_v1.txt").write_text("# Release note for ogbn-arxiv\n\n### v1: initial release\n")
    _hide_test_labels(root, pathlib.Path(hidden))


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The real ogbn-arxiv as OGB publishes it (arxiv.zip), with the test labels moved to hidden/."""
    from pytest_mlab.task_api import DataError, download

    archive = download(URL, pathlib.Path(downloads) / "arxiv.zip", sha256=SHA256, size=SIZE)
    root = pathlib.Path(public) / DIR
    try:
        with zipfile.ZipFile(archive) as bundle:
            bad = bundle.testzip()
            if bad is not None:
                raise DataError(f"{archive}: member {bad} is corrupt; delete the file and prepare again")
            for member in bundle.infolist():
                if member.is_dir() or not member.filename.startswith("arxiv/"):
                    continue
                relative = pathlib.PurePosixPath(member.filename).relative_to("arxiv")
                if ".." in relative.parts:
                    raise DataError(f"{archive}: unsafe member name {member.filename}")
                target = root / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                with bundle.open(member) as source, open(target, "wb") as dest:
                    shutil.copyfileobj(source, dest)
    except zipfile.BadZipFile as error:
        raise DataError(f"{archive} is not a valid zip file ({error}); delete it and prepare again") from None
    if not (root / "raw" / "node-label.csv.gz").is_file():
        raise DataError(f"{archive} has no arxiv/raw/node-label.csv.gz; the OGB layout changed")
    _hide_test_labels(root, pathlib.Path(hidden))

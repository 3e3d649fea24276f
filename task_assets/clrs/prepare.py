"""Data for the CLRS task: Floyd-Warshall samples of the CLRS Algorithmic Reasoning Benchmark.

The real CLRS-30 is a TensorFlow Datasets build (CLRS30_v1.0.0.tar.gz: tfrecord shards per
algorithm and split). Reading it needs tensorflow-datasets and the clrs package; here each split
is one numpy archive whose arrays carry the names and shapes of CLRS's features for
floyd_warshall (batch-major inputs and outputs, time-major hints):

public/CLRS30/floyd_warshall_train.npz, floyd_warshall_val.npz
    input_pos   float32 (B, N)        node positions in [0, 1)
    input_A     float32 (B, N, N)     edge weights (0 where there is no edge)
    input_adj   float32 (B, N, N)     adjacency (1 = edge, self-loops included)
    output_Pi   int32   (B, N, N)     Pi[i, j] = predecessor of j on a shortest path from i
    hint_Pi_h   int32   (T, B, N, N)  Pi after each step k of the outer loop
    hint_D      float32 (T, B, N, N)  distance estimates after each step
    hint_msk    float32 (T, B, N, N)  which distances are known (finite)
    hint_k      float32 (T, B, N)     one-hot: the intermediate node of the step
    lengths     int32   (B,)          number of hint steps of each sample (N + 1)
hidden/floyd_warshall_test.npz   the same for larger graphs (out-of-distribution, as in CLRS): the grader's
hidden/floyd_warshall_test_inputs.npz   input_pos, input_A and input_adj of those graphs alone: the
    measure step's input (``metric.measure.inputs``), the only hidden file that reaches a sandbox

``mini`` samples Erdos-Renyi graphs with uniform weights as CLRS's sampler does, with smaller
sizes (8 nodes for training and validation, 12 for test; CLRS uses 16 and 64). ``full`` converts
the published CLRS-30 archive with tensorflow-datasets when it is installed.
"""

from __future__ import annotations

import pathlib

import numpy as np

from pytest_mlab.data.formats import save_npz

ALGORITHM = "floyd_warshall"
URL = "https://storage.googleapis.com/dm-clrs/CLRS30_v1.0.0.tar.gz"
SIZE: int | None = None  # not published; the archive is checked by unpacking it
MINI = {"train": (400, 8), "val": (64, 8), "test": (64, 12)}  # samples, nodes
FOLDER = "CLRS30"
INPUTS = ("input_pos", "input_A", "input_adj")  # what predict gets: no hints, no outputs


def floyd_warshall(weights: np.ndarray, adj: np.ndarray) -> tuple[np.ndarray, list[tuple]]:
    """Pi and the hint trajectory, following CLRS's implementation (clrs/_src/algorithms/graphs.py)."""
    n = len(weights)
    distance = np.where(adj > 0, weights, 0.0)
    known = adj.astype(bool).copy()
    pi = np.tile(np.arange(n)[:, None], (1, n))
    hints = [(pi.copy(), distance.copy(), known.copy(), np.zeros(n))]
    for k in range(n):
        for i in range(n):
            for j in range(n):
                if known[i, k] and known[k, j] and (not known[i, j] or distance[i, k] + distance[k, j] < distance[i, j]):
                    distance[i, j] = distance[i, k] + distance[k, j]
                    pi[i, j] = pi[k, j]
                    known[i, j] = True
        hints.append((pi.copy(), distance.copy(), known.copy(), np.eye(n)[k]))
    return pi, hints


def sample(rng: np.random.Generator, count: int, n: int) -> dict[str, np.ndarray]:
    arrays: dict[str, list] = {name: [] for name in ("input_pos", "input_A", "input_adj", "output_Pi",
                                                     "hint_Pi_h", "hint_D", "hint_msk", "hint_k")}
    for _ in range(count):
        p = rng.uniform(0.1, 0.9)
        upper = np.triu(rng.random((n, n)) < p, 1)
        adj = (upper | upper.T | np.eye(n, dtype=bool)).astype(np.float32)
        weights = np.triu(rng.uniform(0, 1, (n, n)), 1)
        weights = ((weights + weights.T) * adj).astype(np.float32)
        pi, hints = floyd_warshall(weights, adj)
        arrays["input_pos"].append(np.sort(rng.uniform(0, 1, n)).astype(np.float32))
        arrays["input_A"].append(weights)
        arrays["input_adj"].append(adj)
        arrays["output_Pi"].append(pi.astype(np.int32))
        arrays["hint_Pi_h"].append(np.stack([h[0] for h in hints]).astype(np.int32))
        arrays["hint_D"].append(np.stack([h[1] for h in hints]).astype(np.float32))
        arrays["hint_msk"].append(np.stack([h[2] for h in hints]).astype(np.float32))
        arrays["hint_k"].append(np.stack([h[3] for h in hints]).astype(np.float32))
    out = {name: np.stack(values) for name, values in arrays.items()}
    for name in ("hint_Pi_h", "hint_D", "hint_msk", "hint_k"):
        out[name] = np.swapaxes(out[name], 0, 1)  # time-major, as CLRS's feedback
    out["lengths"] = np.full(count, n + 1, dtype=np.int32)
    return out


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    (pathlib.Path(public) / FOLDER).mkdir(parents=True, exist_ok=True)
    pathlib.Path(hidden).mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for split, (count, n) in MINI.items():
        _save(public, hidden, split, sample(rng, count, n))


def _save(public: pathlib.Path, hidden: pathlib.Path, split: str, arrays: dict[str, np.ndarray]) -> None:
    """Train and validation splits are public; the test split is hidden, with its inputs alone
    beside it for the measure step."""
    if split != "test":
        save_npz(pathlib.Path(public) / FOLDER / f"{ALGORITHM}_{split}.npz", **arrays)
        return
    save_npz(pathlib.Path(hidden) / f"{ALGORITHM}_test.npz", **arrays)
    save_npz(pathlib.Path(hidden) / f"{ALGORITHM}_test_inputs.npz", **{name: arrays[name] for name in INPUTS})


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """CLRS-30's floyd_warshall splits, converted from the published TFDS build."""
    import tarfile

    from pytest_mlab.data.fetch import download
    from pytest_mlab.errors import DataError

    archive = download(URL, pathlib.Path(downloads) / "CLRS30_v1.0.0.tar.gz", size=SIZE)
    try:
        import tensorflow_datasets as tfds
    except ImportError:
        raise DataError(f"the CLRS task's full data needs tensorflow-datasets to read CLRS-30's tfrecords "
                        f"(downloaded to {archive}): pip install tensorflow-datasets, then prepare again") from None
    extracted = pathlib.Path(downloads) / "CLRS30"
    if not extracted.is_dir():
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(downloads, filter="data")
        except (tarfile.TarError, EOFError, OSError) as error:
            raise DataError(f"{archive} cannot be unpacked ({error}); delete it and prepare again") from None
    folder = pathlib.Path(public) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    pathlib.Path(hidden).mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test"):
        builder = tfds.builder_from_directory(str(next(extracted.rglob(f"{ALGORITHM}_{split}/1.0.0"))))
        examples = list(tfds.as_numpy(builder.as_dataset(split=split)))
        if not examples:
            raise DataError(f"{extracted}: no {ALGORITHM} {split} samples")
        arrays = {name: np.stack([e[name] for e in examples]) for name in examples[0]}
        for name in [n for n in arrays if n.startswith("hint_")]:
            arrays[name] = np.swapaxes(arrays[name], 0, 1)
        arrays["output_Pi"] = arrays["output_Pi"].astype(np.int32)  # pointers are stored as floats
        _save(public, hidden, split, arrays)

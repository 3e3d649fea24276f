"""What the workspace snapshot costs after a step that writes a checkpoint next to read-only data.

Run: python bench/step_overhead.py [--rounds 5] [--data-mb 200] [--checkpoint-mb 50]

Each round is one run, as a worker carries out run after run: a fresh workspace with the data
hard-linked from the data cache (as the runner links it), a fresh store, a first step, then an
Execute Script that writes a new checkpoint, then a step that changes nothing. Costs are given as
a multiple of one plain sha256 of the checkpoint file, measured in the same round, interleaved,
so the numbers compare across machines: the snapshot after the checkpoint should cost about one
hash of it (its bytes are read once, hashed while they are copied), plus its one sync, which
waits for the disk to take the file system's unwritten data (the checkpoint and its copy); the
step after costs near zero, and the read-only data is hashed in the first run only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mlab.actions.registry import implementations  # noqa: E402
from pytest_mlab.env import Environment, ReadOnlyRules  # noqa: E402
from pytest_mlab.sandbox import LocalSandbox  # noqa: E402
from pytest_mlab.spec.models import Limits  # noqa: E402
from pytest_mlab.spec.project import Project  # noqa: E402
from pytest_mlab.trace import SnapshotStore, TraceWriter  # noqa: E402
from pytest_mlab.trace.snapshots import store as store_module  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MB = 1 << 20
TRAIN = "import os\nwith open('checkpoint.pt', 'wb') as fh:\n    fh.write(os.urandom({size}))\n"


SYNCED: list[float] = []  # seconds spent in each whole-snapshot sync


def timed_sync(path: Path, real=store_module._sync_filesystem) -> None:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    real(path)
    SYNCED.append(time.perf_counter() - started)


store_module._sync_filesystem = timed_sync


class TimedStore(SnapshotStore):
    """A store that remembers how long each snapshot took, and how much of that was its sync."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.seconds: list[float] = []
        self.synced: list[float] = []

    def snapshot(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        started, before = time.perf_counter(), len(SYNCED)
        try:
            return super().snapshot(*args, **kwargs)
        finally:
            self.seconds.append(time.perf_counter() - started)
            self.synced.append(sum(SYNCED[before:]))


def plain_hash(path: Path) -> float:
    """Seconds to read and sha256 a file, the way anyone would."""
    started = time.perf_counter()
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(MB), b""):
            digest.update(chunk)
    digest.hexdigest()
    return time.perf_counter() - started


def one_run(root: Path, data: Path, project: Project, checkpoint_mb: int, hash_first: bool) -> dict[str, float]:
    """One run's timings: its first snapshot, the one after the checkpoint, the one after that,
    and a plain hash of the checkpoint (before or after the snapshots, alternating by round)."""
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    os.link(data, workspace / data.name)
    (workspace / "train.py").write_text(TRAIN.format(size=checkpoint_mb * MB))
    store = TimedStore(root / "snapshots")
    actions = tuple(project.action(name) for name in ("List Files", "Execute Script"))
    env = Environment(sandbox=LocalSandbox(workspace), actions=actions, implementations=implementations(actions),
                      limits=Limits(max_steps=10),
                      read_only=ReadOnlyRules(frozenset({data.name})), trace=TraceWriter(root / "trace.jsonl"),
                      snapshots=store, research_problem="bench")
    try:
        env.step("List Files", {"dir_path": "."})
        observation = env.step("Execute Script", {"script_name": "train.py"})
        if "Traceback" in observation:
            raise SystemExit(f"the training script failed:\n{observation}")
        checkpoint = workspace / "checkpoint.pt"
        hashed = plain_hash(checkpoint) if hash_first else 0.0
        env.step("List Files", {"dir_path": "."})
        if not hash_first:
            hashed = plain_hash(checkpoint)
    finally:
        env.sandbox.close()
        env.trace.close()
    first, after_checkpoint, unchanged = store.seconds
    return {"first": first, "checkpoint": after_checkpoint, "unchanged": unchanged, "hash": hashed,
            "checkpoint sync": store.synced[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data-mb", type=int, default=200)
    parser.add_argument("--checkpoint-mb", type=int, default=50)
    args = parser.parse_args()
    project = Project(REPO, REPO / "specs/actions", REPO / "agents", REPO / "specs/tasks")
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "cache" / "train.csv"
        data.parent.mkdir()
        with open(data, "wb") as fh:
            for _ in range(args.data_mb):
                fh.write(os.urandom(MB))
        old = time.time() - 3600
        os.utime(data, (old, old))
        rounds = [one_run(Path(scratch) / f"run{index}", data, project, args.checkpoint_mb, index % 2 == 0)
                  for index in range(args.rounds)]
    hashes = [r["hash"] for r in rounds]

    def ratio(key: str, runs: list[dict[str, float]] = rounds) -> str:
        ratios = [r[key] / r["hash"] for r in runs]
        return f"{statistics.median(r[key] for r in runs) * 1000:8.1f} ms  {statistics.median(ratios):6.2f} x one hash"

    print(f"{args.data_mb} MB of read-only data, a {args.checkpoint_mb} MB checkpoint, {args.rounds} runs (medians)")
    print(f"one plain sha256 of the checkpoint:      {statistics.median(hashes) * 1000:8.1f} ms")
    print(f"snapshot after the checkpoint appears:   {ratio('checkpoint')}")
    print(f"  of which its one sync to disk:         {ratio('checkpoint sync')}")
    print(f"next snapshot, nothing changed:          {ratio('unchanged')}")
    print(f"first snapshot of the first run:         {ratio('first', rounds[:1])}  (hashes the data)")
    if len(rounds) > 1:
        print(f"first snapshot of later runs:            {ratio('first', rounds[1:])}  (data digests cached)")


if __name__ == "__main__":
    main()

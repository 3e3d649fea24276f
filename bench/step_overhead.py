"""Harness overhead per step: dispatch + argument checks + trace line + workspace snapshot.

Run: python bench/step_overhead.py [--steps 200] [--big-mb 100] [--files 200]

The workspace holds one large read-only data file and many small files, as a real task does;
each step writes one small file, so the snapshot has one new blob to store. Compare the
per-step time with a real agent step (an LLM call: seconds; a training run: minutes).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mlab.env import Environment, ReadOnlyRules  # noqa: E402
from pytest_mlab.sandbox import LocalSandbox  # noqa: E402
from pytest_mlab.spec.models import Limits  # noqa: E402
from pytest_mlab.spec.project import Project  # noqa: E402
from pytest_mlab.trace import SnapshotStore, TraceWriter  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--big-mb", type=int, default=100)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    project = Project(REPO, REPO / "specs/actions", REPO / "agents", REPO / "specs/tasks")
    actions = tuple(project.action(name) for name in ("Write File", "List Files"))
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        workspace = root / "ws"
        workspace.mkdir()
        with open(workspace / "train.csv", "wb") as handle:
            for _ in range(args.big_mb):
                handle.write(os.urandom(1024 * 1024))
        old = time.time() - 3600
        os.utime(workspace / "train.csv", (old, old))
        for index in range(args.files):
            (workspace / f"module_{index}.py").write_text(f"x = {index}\n" * 20)
        env = Environment(sandbox=LocalSandbox(workspace), actions=actions,
                          limits=Limits(max_steps=args.steps + 10), read_only=ReadOnlyRules(frozenset({"train.csv"})),
                          trace=TraceWriter(root / "run/trace.jsonl"), snapshots=SnapshotStore(root / "run/snapshots"),
                          research_problem="bench")
        started = time.perf_counter()
        env.step("List Files", {"dir_path": "."})
        first = time.perf_counter() - started
        before = env.snapshots.stored_bytes()
        started = time.perf_counter()
        for step in range(args.steps):
            env.step("Write File", {"file_name": "train.py", "content": f"print({step})\n"})
        per_step = (time.perf_counter() - started) / args.steps
        grown = env.snapshots.stored_bytes() - before
        print(f"workspace: {args.big_mb} MB read-only file + {args.files} small files")
        print(f"first step (hashes everything once): {first * 1000:.1f} ms")
        print(f"later steps: {per_step * 1000:.2f} ms per step over {args.steps} steps")
        print(f"store growth over those steps: {grown / args.steps:.0f} bytes per step")


if __name__ == "__main__":
    main()

"""What the live status costs a run per step: one small file replaced atomically (write + rename).

Run: python bench/progress_overhead.py [--steps 200] [--rounds 7] [--dir DIR]

Takes the cheapest step there is, List Files in a small workspace (the Environment, its trace
and the workspace snapshot, as in a run), N times, without and with the run's status following
the trace, taking turns; then the status update alone. Prints the median cost per step of each.
``--dir``: where the files go (default: a temporary folder; pass one on the disk your results
folder is on).
"""

from __future__ import annotations

import argparse
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
from pytest_mlab.trace.progress import RunStatus  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def new_status(folder: Path, steps: int) -> RunStatus:
    return RunStatus.start(folder, "bench-run", nodeid="bench.yaml::bench[mini-a-s0]", run_id="bench[mini-a-s0]",
                           session="bench", max_steps=steps)


def steps_of_a_run(folder: Path, project: Project, steps: int, *, status: bool) -> float:
    """Seconds per List Files step of one run, its status kept current or not."""
    workspace = folder / "ws"
    workspace.mkdir(parents=True)
    for index in range(20):
        (workspace / f"file{index}.py").write_text("print('hello')\n" * 50)
    observer = new_status(folder, steps).observe if status else None
    actions = (project.action("List Files"),)
    env = Environment(sandbox=LocalSandbox(workspace), actions=actions, implementations=implementations(actions),
                      limits=Limits(max_steps=steps + 1), read_only=ReadOnlyRules(frozenset()),
                      trace=TraceWriter(folder / "trace.jsonl", observer=observer),
                      snapshots=SnapshotStore(folder / "snapshots"), research_problem="bench")
    try:
        env.step("List Files", {"dir_path": "."})  # the first snapshot stores every file: not a typical step
        started = time.perf_counter()
        for _ in range(steps):
            env.step("List Files", {"dir_path": "."})
        return (time.perf_counter() - started) / steps
    finally:
        env.sandbox.close()
        env.trace.close()


def status_alone(folder: Path, steps: int) -> float:
    status = new_status(folder, steps)
    started = time.perf_counter()
    for step in range(1, steps + 1):
        status.observe({"type": "step", "step": step})
    return (time.perf_counter() - started) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    project = Project(REPO, REPO / "specs/actions", REPO / "agents", REPO / "specs/tasks")
    plain, watched, alone = [], [], []
    with tempfile.TemporaryDirectory(dir=args.dir) as name:
        for index in range(args.rounds):  # taking turns, so that a busy moment hits both alike
            plain.append(steps_of_a_run(Path(name) / f"plain{index}", project, args.steps, status=False))
            watched.append(steps_of_a_run(Path(name) / f"watched{index}", project, args.steps, status=True))
            alone.append(status_alone(Path(name) / f"alone{index}", args.steps))
    plain_ms, watched_ms, alone_ms = (statistics.median(values) * 1000 for values in (plain, watched, alone))
    print(f"{args.steps} List Files steps per run, {args.rounds} runs each (medians), "
          f"in {args.dir or 'a temporary folder'}:")
    print(f"  step, no status:           {plain_ms:7.3f} ms")
    print(f"  step, status kept current: {watched_ms:7.3f} ms")
    print(f"  the status update alone:   {alone_ms:7.3f} ms  ({alone_ms / plain_ms:.0%} of the cheapest step)")


if __name__ == "__main__":
    main()

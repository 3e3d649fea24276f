"""Is a timed task's score stable on a loaded machine? The unchanged starter graded against itself.

Run: python bench/timing_stability.py [--task vectorization --task llama-inference] [--runs 20]
     [--busy 2] [--sandbox auto] [--cache DIR] [--raw FILE]
     python bench/timing_stability.py --rescore FILE [FILE...]

For each task (mini data, prepared into ``--cache``), the unchanged starter is snapshotted as a
submission and graded ``--runs`` times through the harness's own grading path (measure step in a
fresh sandbox per execution, grader in its own process), while ``--busy`` CPU-bound processes,
started here and killed at the end, compete for the cores. Every score is printed with whether
it lands inside the task's baseline tolerance around 1.0, and the wall-clock seconds of each
grading; ``--raw`` writes every grading's timing record (CPU seconds per round) as JSON lines,
to compare statistics offline; ``--rescore`` reads such files back and scores every recorded
grading again with the harness's current arithmetic (pytest_mlab/grading/timing.py), beside the
score recorded when it ran, so a change of statistic is judged on the same executions. Nothing
is asserted: the numbers are only printed, and the exit
status is 1 when a score falls outside its tolerance.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[1]
TASKS = ("vectorization", "llama-inference")


def _burn() -> None:
    while True:
        pass


@contextmanager
def busy(count: int) -> Iterator[None]:
    """``count`` CPU-bound processes for the duration, killed (by their own handles) at the end."""
    workers = [multiprocessing.Process(target=_burn, daemon=True) for _ in range(count)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.kill()
            worker.join()


def bench_task(name: str, runs: int, sandbox: str, cache: Path, raw) -> list[bool]:
    """Grade the unchanged starter ``runs`` times; returns, per grading, whether it was in tolerance."""
    from pytest_mlab.data.cache import prepare_data
    from pytest_mlab.grading.grader import grade_snapshot
    from pytest_mlab.sandbox.base import SandboxOptions
    from pytest_mlab.spec.project import Project
    from pytest_mlab.trace import SnapshotStore

    project = Project(REPO, REPO / "specs" / "actions", REPO / "agents", REPO / "specs" / "tasks")
    task = project.task_from_file(REPO / "specs" / "tasks" / f"{name}.yaml")
    data = prepare_data(task, "mini", cache)
    tolerance = task.tolerance("mini")
    print(f"{name}: {task.metric.measure.timing_repeats} rounds, tolerance {tolerance} around 1.0", flush=True)
    inside: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="mlab-bench-timing-") as scratch:
        workspace = Path(scratch) / "workspace"
        workspace.mkdir()
        for source, relative in task.env_files():
            (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
            (workspace / relative).write_bytes(source.read_bytes())
        store = SnapshotStore(Path(scratch) / "snapshots")
        snapshot = store.snapshot(workspace, link_paths=data.public_files()).id
        options = SandboxOptions.for_task(task, task.limits, f"bench-{name}")
        for index in range(runs):
            started = time.perf_counter()
            grade = grade_snapshot(task, store, snapshot, data, sandbox=sandbox, options=options)
            seconds = time.perf_counter() - started
            ok = grade.valid and grade.score is not None and abs(grade.score - 1.0) <= tolerance
            inside.append(ok)
            shown = f"{grade.score:.3f}" if grade.score is not None else f"invalid: {grade.invalid_reason}"
            print(f"  {index + 1:2d}  score {shown}  {'inside' if ok else 'OUTSIDE'}  {seconds:6.1f} s", flush=True)
            if raw is not None:
                raw.write(json.dumps({"task": name, "score": grade.score, "seconds": seconds,
                                      "timing": dict(grade.timing or {})}) + "\n")
                raw.flush()
    return inside


def rescore(files: list[Path]) -> dict[str, list[bool]]:
    """Every grading recorded in ``files`` (``--raw`` output), scored again by Timing.relative."""
    from pytest_mlab.grading.timing import Timing
    from pytest_mlab.spec.project import Project

    project = Project(REPO, REPO / "specs" / "actions", REPO / "agents", REPO / "specs" / "tasks")
    results: dict[str, list[bool]] = {}
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            name, timing = record["task"], record["timing"]
            tolerance = project.task_from_file(REPO / "specs" / "tasks" / f"{name}.yaml").tolerance("mini")
            score = Timing(timing["repeats"], tuple(timing["submission"]), tuple(timing["starter"]),
                           tuple(timing["overhead"]), slow=bool(timing.get("slow"))).relative
            ok = abs(score - 1.0) <= tolerance
            results.setdefault(name, []).append(ok)
            recorded = record["score"]
            print(f"{name:16s} {len(results[name]):2d}  score {score:.3f}  {'inside' if ok else 'OUTSIDE'}"
                  f"  (recorded {recorded:.3f}, {record['seconds']:.1f} s)")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", action="append", choices=TASKS, help="a task to bench (repeatable); default both")
    parser.add_argument("--runs", type=int, default=20, help="gradings per task (default 20)")
    parser.add_argument("--busy", type=int, default=2, help="CPU-bound processes beside the gradings (default 2)")
    parser.add_argument("--sandbox", default="auto", help="the sandbox kind of the measure step (default auto)")
    parser.add_argument("--cache", type=Path, help="data cache folder (default: a temporary one)")
    parser.add_argument("--raw", type=Path, help="write every grading's timing record here (JSON lines)")
    parser.add_argument("--rescore", type=Path, nargs="+", metavar="FILE",
                        help="score the gradings recorded by --raw again with the current arithmetic; runs nothing")
    args = parser.parse_args()
    if args.rescore:
        return summary(rescore(args.rescore))
    raw = open(args.raw, "w", encoding="utf-8") if args.raw else None
    results: dict[str, list[bool]] = {}
    with tempfile.TemporaryDirectory(prefix="mlab-bench-cache-") as default_cache, busy(args.busy):
        print(f"{args.busy} busy processes beside the gradings", flush=True)
        for name in args.task or TASKS:
            results[name] = bench_task(name, args.runs, args.sandbox, args.cache or Path(default_cache), raw)
    if raw is not None:
        raw.close()
    return summary(results)


def summary(results: dict[str, list[bool]]) -> int:
    """Each task's count of scores inside its tolerance; the exit status, 1 if any fell outside."""
    for name, inside in results.items():
        print(f"{name}: {sum(inside)} of {len(inside)} inside the tolerance")
    return 0 if all(all(inside) for inside in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

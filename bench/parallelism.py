"""What ``-n 2`` buys over ``-n 0`` on a handful of main-job items: wall and CPU time, interleaved.

Run: python bench/parallelism.py [--tasks diabetes,house-price,spaceship-titanic,parkinsons-disease]
                                 [--workers 2] [--rounds 2] [--agent baseline] [--json FILE] [--no-history]
                                 [--pytest-args "-p no:hypothesispytest"]

The tasks' mini data is prepared once, before anything is timed; every session then gets its
own copy of that cache and its own results folder, so no session waits on another's locks. One
untimed ``-n 0`` session runs first (it also leaves the harness's bytecode written, as an installed
package has it, whatever PYTHONDONTWRITEBYTECODE says in the caller's shell). Each timed
results folder starts with that session's results.json, as a
user's results folder holds the rows of earlier sessions: under xdist, runs then go out longest
first, planned from those times (pytest_mlab/plugin/schedule.py); ``--no-history`` starts every
session empty (xdist's own load scheduling, as in a first session). The sessions alternate (``-n 0``, ``-n N``, ``-n 0``, ...: ABAB), so
that load from other work on the machine falls on both sides alike.

Per session: wall time, and CPU time of everything the session ran. The CPU time is read from a
cpuacct cgroup made for the session where the cgroup file system is writable (the sandboxes'
own cgroups are made inside it, so their scripts count, however they were reaped); elsewhere it
is the kernel's count of reaped children, which misses scripts that a sandbox's own init reaped
(bwrap), and the report says which. Also each item's wall time (results.json) and the machine's
load average at the start and end of each session: wall-time ratios taken beside other work say
little, CPU-time ratios much more.

The speed-up is the mean ``-n 0`` wall time over the mean ``-n N`` wall time; 2 workers on 2
cores approach 2x only when the items are CPU-bound, of similar length and the harness's fixed
costs (worker start-up, imports) are small beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TASKS = ("diabetes", "house-price", "spaceship-titanic", "parkinsons-disease")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
CLI = "import sys; from pytest_mlab.cli import main; sys.exit(main(sys.argv[1:]))"
# this checkout's harness, wherever the package is installed; bytecode is written and read, as on a
# user's machine: with PYTHONDONTWRITEBYTECODE every process compiles whatever changed since bytecode
# was last written, and -n 2 starts three processes where -n 0 starts one
ENV = {**{key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPATH": str(REPO)}


class CpuGroup:
    """A cpuacct cgroup (v1) a session runs in, or nothing where one cannot be made."""

    def __init__(self) -> None:
        self.path: Path | None = None
        candidate = CPUACCT / f"bench-parallelism-{uuid.uuid4().hex[:8]}"
        try:
            candidate.mkdir()
            self.path = candidate
        except OSError:
            pass

    def enter(self) -> None:
        """Called in the child between fork and exec: it and everything it starts count here."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def seconds(self) -> float | None:
        return None if self.path is None else int((self.path / "cpuacct.usage").read_text()) / 1e9

    def remove(self) -> None:
        if self.path is not None:
            for _ in range(50):
                try:
                    self.path.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def prepare(tasks: list[str], cache: Path) -> None:
    """Every task's mini data, into ``cache``, before any timing."""
    for task in tasks:
        subprocess.run([sys.executable, "-c", CLI, "prepare", task, "--data", "mini", "--cache", str(cache)],
                       cwd=REPO, env=ENV, check=True, stdout=subprocess.DEVNULL)


def session(tasks: list[str], agent: str, workers: int, prepared: Path, scratch: Path, index: int | str,
            extra: list[str], history: Path | None = None) -> dict[str, Any]:
    """One pytest session of the tasks' ``agent`` items with ``-n workers`` and ``extra`` arguments,
    in private folders; ``history``: a results.json its results folder starts with."""
    out, cache = scratch / f"out-{index}", scratch / f"cache-{index}"
    shutil.copytree(prepared, cache, symlinks=True)
    if history is not None:
        out.mkdir()
        shutil.copy(history, out / "results.json")
    specs = [f"specs/tasks/{task}.yaml" for task in tasks]
    argv = [sys.executable, "-m", "pytest", *specs, "-k", agent, "-n", str(workers), "-q", "-p", "no:cacheprovider",
            "--mlab-out", str(out), "--mlab-cache", str(cache), *extra]
    group = CpuGroup()
    load = os.getloadavg()[0]
    before, started = children_cpu(), time.perf_counter()
    completed = subprocess.run(argv, cwd=REPO, env=ENV, capture_output=True, text=True,
                               preexec_fn=group.enter)
    wall = time.perf_counter() - started
    reaped = children_cpu() - before
    cgroup = group.seconds()
    group.remove()
    if completed.returncode != 0:
        sys.stderr.write(completed.stdout[-3000:] + completed.stderr[-3000:])
    runs = json.loads((out / "results.json").read_text())["runs"] if (out / "results.json").exists() else []
    shutil.rmtree(cache, ignore_errors=True)
    return {"workers": workers, "rc": completed.returncode, "wall_s": round(wall, 2),
            "cpu_s": round(cgroup if cgroup is not None else reaped, 2),
            "cpu_counted_by": "cgroup" if cgroup is not None else "reaped children (scripts under bwrap missing)",
            "load_start": round(load, 2), "load_end": round(os.getloadavg()[0], 2),
            "items": {run["run_id"]: run["wall_time"] for run in runs}}


def summary(sessions: list[dict[str, Any]], workers: int) -> dict[str, Any]:
    def mean(n: int, key: str) -> float:
        return statistics.mean(s[key] for s in sessions if s["workers"] == n)

    serial, parallel = mean(0, "wall_s"), mean(workers, "wall_s")
    return {"wall_n0_s": round(serial, 2), f"wall_n{workers}_s": round(parallel, 2),
            "speedup": round(serial / parallel, 2),
            "cpu_n0_s": round(mean(0, "cpu_s"), 2), f"cpu_n{workers}_s": round(mean(workers, "cpu_s"), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of sessions (-n 0 then -n N)")
    parser.add_argument("--agent", default="baseline", help="which items of each task (a -k expression)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--pytest-args", default="", help="more pytest arguments for every session (one string)")
    parser.add_argument("--no-history", action="store_true",
                        help="start every session with an empty results folder (a first session: xdist's own "
                             "load scheduling) instead of the rows of an untimed -n 0 session (planned, longest first)")
    args = parser.parse_args()
    tasks = args.tasks.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-parallelism-") as folder:
        scratch = Path(folder)
        prepare(tasks, scratch / "prepared")
        # an untimed first session: the rows every timed session starts with (unless --no-history)
        first = session(tasks, args.agent, 0, scratch / "prepared", scratch, "history", shlex.split(args.pytest_args))
        print(json.dumps({"history": first["items"]}), flush=True)
        history = None if args.no_history else scratch / "out-history" / "results.json"
        sessions = []
        for round_ in range(args.rounds):
            for workers in (0, args.workers):
                sessions.append(session(tasks, args.agent, workers, scratch / "prepared", scratch, len(sessions),
                                        shlex.split(args.pytest_args), history=history))
                print(json.dumps(sessions[-1]), flush=True)
    results = {"cores": os.cpu_count(), "tasks": tasks, "sessions": sessions, "summary": summary(sessions, args.workers)}
    print(json.dumps(results["summary"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

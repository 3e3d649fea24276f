"""How long the main job takes: ``pytest specs/ -n 2``, idle or beside busy processes.

    python bench/main_job.py                       # data cache of a first run: prepared from scratch
    python bench/main_job.py --cache DIR           # a kept cache: the second run finds its data prepared
    python bench/main_job.py --cache DIR --busy 2  # beside two CPU-bound processes started here
    python bench/main_job.py -- -k "diabetes"      # pytest arguments after ``--`` pass through

The run gets results and data folders of its own (never the user's ``mlab-results/`` or data
cache), so it can run beside a user's session. It prints the wall time, the outcome counts, each
item's time (from the JUnit XML pytest writes) and the largest peak resident memory any one
process on the machine reached while the run went on (each process's ``VmHWM``, read from
``/proc`` twice a second: a script, a grader or a worker; run it on an otherwise idle machine), which says whether ``-n 2`` fits a laptop. Sandboxed
scripts are reaped by their sandbox, not by pytest, so the kernel's count of reaped children
would miss them. ``--busy N`` starts N processes that spin
on the CPU for the whole run and stops them after it: the load a developer's build or a second job
puts beside the main job.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPIN = "while True:\n    pass\n"


def item_times(junit: Path) -> list[tuple[str, float, str]]:
    """(item name, seconds, outcome) of every item of a JUnit XML report."""
    rows = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        rows.append((case.get("name", "?"), float(case.get("time") or 0), outcome))
    return rows


class PeakMemory(threading.Thread):
    """The largest VmHWM of any process on the machine but ``ignored``, sampled until stopped."""

    def __init__(self, ignored: set[int]) -> None:
        super().__init__(daemon=True)
        self.ignored, self.peak_kb, self.stopped = ignored, 0, threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.5):
            for status in Path("/proc").glob("[0-9]*/status"):
                if int(status.parent.name) in self.ignored:
                    continue
                try:
                    line = next(line for line in status.read_text().splitlines() if line.startswith("VmHWM:"))
                except (OSError, StopIteration):
                    continue
                self.peak_kb = max(self.peak_kb, int(line.split()[1]))


def run_main_job(out: Path, cache: Path, busy: int, pytest_args: list[str]) -> tuple[float, int, float]:
    """Run the main job once; returns its wall time, exit code and the largest peak memory (MB) of
    one process, with the busy processes stopped."""
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(busy)]
    memory = PeakMemory({os.getpid(), *(spinner.pid for spinner in spinners)})
    memory.start()
    command = [sys.executable, "-m", "pytest", "specs/", "-n", "2", "-q", "-p", "no:cacheprovider",
               f"--mlab-out={out}", f"--mlab-cache={cache}", f"--junitxml={out / 'junit.xml'}", *pytest_args]
    print("$", " ".join(command[2:]), flush=True)
    try:
        start = time.perf_counter()
        code = subprocess.run(command, cwd=REPO, check=False).returncode
        return time.perf_counter() - start, code, memory.peak_kb / 1024
    finally:
        memory.stopped.set()
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, help="data cache to use and keep (default: a new, empty one)")
    parser.add_argument("--busy", type=int, default=0, help="CPU-bound processes to run beside it (default: 0)")
    parser.add_argument("--slowest", type=int, default=12, help="how many of the slowest items to list")
    parser.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest")
    options = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="main-job-"))
    cache = options.cache or scratch / "cache"
    out = scratch / "out"
    out.mkdir()
    state = "a kept" if cache.is_dir() and any(cache.iterdir()) else "an empty"
    print(f"{datetime.date.today()}  {platform.node()}  {os.cpu_count()} CPUs  "
          f"{state} data cache  "
          f"{options.busy} busy processes beside it", flush=True)
    try:
        wall, code, peak_mb = run_main_job(out, cache, options.busy, options.pytest_args)
    finally:
        if options.cache is None:  # about 1 GB of mini data nobody asked to keep
            shutil.rmtree(cache, ignore_errors=True)
    rows = item_times(out / "junit.xml")
    counts = Counter(outcome for _, _, outcome in rows)
    print(f"\nwall time: {wall:.0f} s ({wall / 60:.1f} min), exit code {code}: "
          + ", ".join(f"{count} {outcome}" for outcome, count in sorted(counts.items())))
    print(f"item time: {sum(seconds for _, seconds, _ in rows):.0f} s summed over {len(rows)} items")
    print(f"largest peak memory of one process: {peak_mb:,.0f} MB")
    print(f"\nslowest {options.slowest} items:")
    for name, seconds, outcome in sorted(rows, key=lambda row: -row[1])[:options.slowest]:
        print(f"{seconds:>8.1f} s  {outcome:<7}  {name}")
    print(f"\nresults: {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())

"""What the local sandbox adds to running a script: process-tree tracking, output capture, cleanup.

Run: python bench/exec_overhead.py [--runs 20]

Compares ``LocalSandbox.exec`` with a bare ``subprocess.run`` of the same command.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mlab.sandbox import LocalSandbox  # noqa: E402

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python, 1 s of sleep": [sys.executable, "-c", "import time; time.sleep(1)"],
    "python, 10 MB of output": [sys.executable, "-c", "import sys; sys.stdout.write('x' * 10_000_000)"],
}


def timed(run, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with LocalSandbox() as sandbox:
        for label, argv in COMMANDS.items():
            bare = timed(lambda: subprocess.run(argv, capture_output=True), args.runs)
            boxed = timed(lambda: sandbox.exec(argv, timeout=60, output_limit=1024 * 1024), args.runs)
            print(f"{label:26s} bare {bare * 1000:8.1f} ms   sandbox {boxed * 1000:8.1f} ms   "
                  f"overhead {(boxed - bare) * 1000:+7.1f} ms")


if __name__ == "__main__":
    main()

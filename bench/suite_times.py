"""Where the test suite's time goes: wall time, and each test folder's share of the test time.

    python bench/suite_times.py                      # pytest tests/ -n 2, then the table
    python bench/suite_times.py -m "not slow"        # the fast tier; any pytest arguments pass through
    python bench/suite_times.py --junit report.xml   # the table of an earlier run's JUnit XML

Test time is summed per folder from the JUnit XML that pytest writes (set-up, call and teardown of
each test); with ``-n 2`` the sum is about twice the wall time. The slowest tests are listed too,
since one long test on one worker sets the wall time as much as any folder does.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_times(junit: Path) -> list[tuple[str, float]]:
    """(node id, seconds) of every test case in a JUnit XML report."""
    cases = ElementTree.parse(junit).getroot().iter("testcase")
    return [(f"{case.get('classname', '')}::{case.get('name', '')}", float(case.get("time") or 0)) for case in cases]


def folder_of(node_id: str) -> str:
    """``tests.sandbox.test_docker.TestX::test_y`` -> ``tests/sandbox``; top-level modules -> ``tests``."""
    module_parts = [part for part in node_id.split("::")[0].split(".") if not part[:1].isupper()]
    return "/".join(module_parts[:-1]) or module_parts[0]


def table(times: list[tuple[str, float]], wall: float | None, slowest: int) -> str:
    per_folder: dict[str, list[float]] = defaultdict(list)
    for node_id, seconds in times:
        per_folder[folder_of(node_id)].append(seconds)
    total = sum(seconds for _, seconds in times) or 1.0
    lines = [f"{'folder':<22} {'tests':>6} {'seconds':>9} {'share':>6}"]
    for folder, seconds in sorted(per_folder.items(), key=lambda entry: -sum(entry[1])):
        lines.append(f"{folder:<22} {len(seconds):>6} {sum(seconds):>9.1f} {sum(seconds) / total:>6.1%}")
    lines.append(f"{'all':<22} {len(times):>6} {total:>9.1f}")
    if wall is not None:
        lines.append(f"wall time: {wall:.0f} s ({wall / 60:.1f} min)")
    lines.append(f"\nslowest {slowest} tests:")
    lines += [f"{seconds:>8.1f} s  {node_id}" for node_id, seconds in sorted(times, key=lambda t: -t[1])[:slowest]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--junit", type=Path, help="read this JUnit XML instead of running the suite")
    parser.add_argument("--slowest", type=int, default=15, help="how many of the slowest tests to list")
    known, pytest_args = parser.parse_known_args(argv)
    wall = None
    if known.junit is None:
        known.junit = Path(tempfile.mkdtemp(prefix="suite-times-")) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "tests/", "-n", "2", "-q", "-p", "no:cacheprovider",
                   f"--junitxml={known.junit}", *pytest_args]
        print("$", " ".join(command[2:]), flush=True)
        start = time.perf_counter()
        subprocess.run(command, cwd=REPO, check=False)
        wall = time.perf_counter() - start
    print(table(test_times(known.junit), wall, known.slowest))
    return 0


if __name__ == "__main__":
    sys.exit(main())

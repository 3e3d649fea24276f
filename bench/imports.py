"""What the plugin costs a run that collects no spec, and how soon a session that cannot call its
model says so.

Run: python bench/imports.py [--runs 5] [--cases no-spec,no-spec-no-plugin,no-key-n0,no-key-n8,unknown-model-n8]

Each case runs in a fresh interpreter, all cases taking turns, and the medians of wall and CPU
time (the child's user + system time: less disturbed by other work on the machine) are printed:

- a folder with one plain test, with the plugin and with ``-p no:mlab``; a conftest there counts
  the pytest_mlab modules imported and says whether litellm, pandas, matplotlib or docker were;
- ``pytest specs/ --agent=research --llm=gpt-4`` without OPENAI_API_KEY, with ``-n 0`` and
  ``-n 8``, and ``--llm=nosuchprovider/xyz``: each must end with exit code 4 (usage error).

Nothing is asserted beyond those exit codes; the numbers are only printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collect import REPO, empty_project  # noqa: E402  (bench/ is no package)

HEAVY = ("litellm", "openai", "pandas", "matplotlib", "docker")
#: written into the plain folder: what the process imported, as one JSON line in imports.json
PROBE = f"""
import json, sys
def pytest_unconfigure(config):
    with open("imports.json", "w") as out:
        json.dump({{"mlab": sorted(m for m in sys.modules if m.split(".")[0] == "pytest_mlab"),
                    "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}, out)
"""
UNSET = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "USE_LITELLM_PROXY")


def run(command: list[str], cwd: Path, *, expect: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``command`` in a fresh interpreter, which must exit with ``expect``."""
    environment = {name: value for name, value in os.environ.items() if name not in UNSET}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=environment)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expect:
        sys.exit(f"{' '.join(command)}: exit {done.returncode}, expected {expect}:\n{done.stdout[-2000:]}"
                 f"{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case, taking turns (default: 5)")
    parser.add_argument("--cases", default="", help="comma-separated cases to time (default: all)")
    args = parser.parse_args()
    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    with tempfile.TemporaryDirectory() as folder:
        plain = empty_project(Path(folder) / "plain")
        (plain / "conftest.py").write_text(PROBE)
        out = ["--mlab-out", str(Path(folder) / "out"), "--mlab-cache", str(Path(folder) / "cache")]
        key_error = [*pytest, "specs/", "--agent=research", *out]
        cases = {
            "no-spec": ([*pytest, "."], plain, 0),
            "no-spec-no-plugin": ([*pytest, ".", "-p", "no:mlab"], plain, 0),
            "no-key-n0": ([*key_error, "--llm=gpt-4", "-n", "0"], REPO, 4),
            "no-key-n8": ([*key_error, "--llm=gpt-4", "-n", "8"], REPO, 4),
            "unknown-model-n8": ([*key_error, "--llm=nosuchprovider/xyz", "-n", "8"], REPO, 4),
        }
        wanted = [name for name in args.cases.split(",") if name]
        cases = {name: case for name, case in cases.items() if not wanted or name in wanted}
        run([*pytest, "."], plain, expect=0)  # warm-up (page cache), and what a run with no spec imports
        imported = json.loads((plain / "imports.json").read_text())
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (command, cwd, expect) in cases.items():
                samples[name].append(run(command, cwd, expect=expect))
    load = os.getloadavg()[0]
    print(f"median of {args.runs} runs each, cases taking turns; load average {load:.1f} on {os.cpu_count()} CPUs")
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set: every run compiles pytest, its plugins and pytest-mlab from source")
    print(f"a run with no spec imports {len(imported['mlab'])} pytest_mlab modules; heavy libraries: "
          f"{', '.join(imported['heavy']) or 'none'}")
    for name, values in samples.items():
        wall = statistics.median(value[0] for value in values)
        cpu = statistics.median(value[1] for value in values)
        print(f"  {name:18s} {wall:6.2f} s wall  {cpu:6.2f} s CPU  (wall min {min(v[0] for v in values):.2f}, "
              f"max {max(v[0] for v in values):.2f})")


if __name__ == "__main__":
    main()

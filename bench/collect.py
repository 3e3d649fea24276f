"""How fast pytest collects Task specs, and what the plugin costs a run that collects none.

Run: python bench/collect.py [--specs 1000] [--runs 5]

Two throw-away projects hold this repository's Action and Agent specs, a link to its task_assets
and ``--specs`` Task specs in specs/tasks: "full" has renamed copies of the real task specs,
"extends" has the real specs plus short specs that ``extends:`` one of them. Each is collected
with ``pytest --collect-only`` in a subprocess, both flavours taking turns, and the median is
printed as specs per second and as the wall time for all of them. The plugin's own cost is a run of
a folder with one plain test, with the plugin and with ``-p no:mlab``, also taking turns.
Nothing is asserted; the numbers are only printed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REAL_TASKS = sorted((REPO / "specs" / "tasks").glob("*.yaml"))
NAME_LINE = re.compile(r"^name:\s*(.*?)\s*$", re.MULTILINE)
COLLECT = ("--collect-only", "-q", "-p", "no:cacheprovider")


def new_project(folder: Path) -> Path:
    """A project with the repository's actions, agents and task assets, and no Task spec yet."""
    shutil.copytree(REPO / "specs" / "actions", folder / "specs" / "actions")
    shutil.copytree(REPO / "agents", folder / "agents")
    (folder / "specs" / "tasks").mkdir()
    (folder / "task_assets").symlink_to(REPO / "task_assets", target_is_directory=True)
    (folder / "pytest.ini").write_text("[pytest]\n")
    return folder


def full_project(folder: Path, count: int) -> Path:
    """``count`` renamed copies of the real task specs."""
    tasks = new_project(folder) / "specs" / "tasks"
    for index in range(count):
        source = REAL_TASKS[index % len(REAL_TASKS)]
        name = f"{source.stem}-{index:04d}"
        (tasks / f"{name}.yaml").write_text(NAME_LINE.sub(f"name: {name}", source.read_text(), count=1))
    return folder


def extends_project(folder: Path, count: int) -> Path:
    """The real task specs plus short specs extending them: ``count`` specs in all."""
    tasks = new_project(folder) / "specs" / "tasks"
    for source in REAL_TASKS:
        shutil.copy2(source, tasks / source.name)
    parents = [NAME_LINE.search(source.read_text()).group(1) for source in REAL_TASKS]
    for index in range(count - len(REAL_TASKS)):
        parent = parents[index % len(parents)]
        name = f"{parent}-{index:04d}"
        (tasks / f"{name}.yaml").write_text(
            f"kind: Task\nname: {name}\nextends: {parent}\ndescription: A variant of {parent}.\n"
            f"limits: {{max_steps: {10 + index % 20}}}\n")
    return folder


def empty_project(folder: Path) -> Path:
    """A folder with one plain test and no spec: what any pytest run pays for the plugin."""
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "test_plain.py").write_text("def test_nothing():\n    pass\n")
    return folder


def timed(folder: Path, *, plugin: bool = True, min_items: int = 1) -> float:
    """Seconds for one ``pytest --collect-only`` of ``folder`` in a fresh interpreter."""
    extra = ["--mlab-cache", str(folder / ".cache")] if plugin else ["-p", "no:mlab"]
    command = [sys.executable, "-m", "pytest", ".", *COLLECT, *extra]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    items = sum(1 for line in done.stdout.splitlines() if "::" in line)
    if done.returncode != 0 or items < min_items:
        sys.exit(f"pytest failed in {folder} (exit {done.returncode}, {items} items):\n{done.stdout[-3000:]}"
                 f"{done.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=1000, help="Task specs per project (default: 1000)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case, taking turns (default: 5)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        projects = {"full": full_project(root / "full", args.specs),
                    "extends": extends_project(root / "extends", args.specs)}
        plain = empty_project(root / "plain")
        samples: dict[str, list[float]] = {name: [] for name in [*projects, "plugin", "no plugin"]}
        for project in projects.values():  # warm-up: page cache
            timed(project, min_items=args.specs)
        timed(plain)
        for _ in range(args.runs):
            for name, project in projects.items():
                samples[name].append(timed(project, min_items=args.specs))
            samples["plugin"].append(timed(plain))
            samples["no plugin"].append(timed(plain, plugin=False))
    median = {name: statistics.median(values) for name, values in samples.items()}
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set, so every run compiles pytest, its plugins and pytest-mlab from "
              "source; users' runs read cached bytecode and are faster (unset it to measure what they see)")
    print(f"collecting {args.specs} Task specs (pytest --collect-only, median of {args.runs}, fresh interpreter each):")
    for name in projects:
        beyond = median[name] - median["plugin"]
        print(f"  {name:8s} {args.specs / median[name]:7.0f} specs/s   {median[name]:6.2f} s for {args.specs} specs   "
              f"({beyond:.2f} s of it beyond a run that collects no spec; "
              f"min {min(samples[name]):.2f} s, max {max(samples[name]):.2f} s)")
    cost = median["plugin"] - median["no plugin"]
    print(f"a run that collects no spec: {median['plugin']:.3f} s with the plugin, {median['no plugin']:.3f} s "
          f"with -p no:mlab: the plugin adds {cost * 1000:.0f} ms ({median['plugin'] / median['no plugin']:.2f}x)")


if __name__ == "__main__":
    main()

"""How fast pytest collects Task specs, and what the plugin costs a run that collects none.

Run: python bench/collect.py [--specs 1000] [--runs 5]   (a quick check that it works: --specs 20 --runs 1)

Two throw-away projects hold this repository's Action and Agent specs, a link to its task_assets
and ``--specs`` Task specs in specs/tasks: "full" has renamed copies of the real task specs, each
with its baselines file renamed too (a catalogue of that many measured tasks), "extends" has the
real specs and their baselines plus short specs that ``extends:`` one of them, taking turns between
a change the starter's score does not depend on (the description: they read their parent's
baselines) and one it does (a limit: they have none yet, and their runs are skipped). Each is
collected with ``pytest --collect-only`` in a subprocess, both flavours taking turns, and the
median is printed as specs per second and as the wall time for all of them. The plugin's own cost
is a run of a folder with one plain test, with the plugin and with ``-p no:mlab``, also taking
turns. Nothing is asserted; the numbers are only printed. With ``--runs 1`` there is no warm-up
run (tests/bench/ runs it so, to keep it working).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
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
TASK_LINE = re.compile(r"^task:\s*(.*?)\s*$", re.MULTILINE)
MEASURED = re.compile(r"(measured:\s*)\.\./baselines/[^\s}]+\.yaml")
BASELINES = REPO / "specs" / "baselines"
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
    (folder / "specs" / "baselines").mkdir()
    for index in range(count):
        source = REAL_TASKS[index % len(REAL_TASKS)]
        name = f"{source.stem}-{index:04d}"
        text = NAME_LINE.sub(f"name: {name}", source.read_text(), count=1)
        (tasks / f"{name}.yaml").write_text(MEASURED.sub(rf"\g<1>../baselines/{name}.yaml", text))
        if (BASELINES / source.name).is_file():
            (folder / "specs" / "baselines" / f"{name}.yaml").write_text(
                TASK_LINE.sub(f"task: {name}", (BASELINES / source.name).read_text(), count=1))
    return folder


def extends_project(folder: Path, count: int) -> Path:
    """The real task specs plus short specs extending them: ``count`` specs in all."""
    tasks = new_project(folder) / "specs" / "tasks"
    shutil.copytree(BASELINES, folder / "specs" / "baselines")
    for source in REAL_TASKS:
        shutil.copy2(source, tasks / source.name)
    parents = [NAME_LINE.search(source.read_text()).group(1) for source in REAL_TASKS]
    for index in range(count - len(REAL_TASKS)):
        parent = parents[index % len(parents)]
        name = f"{parent}-{index:04d}"
        change = f"limits: {{max_steps: {10 + index % 20}}}\n" if index % 2 else ""  # odd: needs its own baseline
        (tasks / f"{name}.yaml").write_text(
            f"kind: Task\nname: {name}\nextends: {parent}\ndescription: A variant of {parent}.\n{change}")
    return folder


def empty_project(folder: Path) -> Path:
    """A folder with one plain test and no spec: what any pytest run pays for the plugin."""
    folder.mkdir()
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "test_plain.py").write_text("def test_nothing():\n    pass\n")
    return folder


def children_cpu() -> float:
    """CPU seconds (user and system) of the child processes waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(folder: Path, *, plugin: bool = True, min_items: int = 1) -> tuple[float, float]:
    """Wall and CPU seconds for one ``pytest --collect-only`` of ``folder`` in a fresh interpreter
    (the CPU time is what a busy machine disturbs least)."""
    extra = ["--mlab-cache", str(folder / ".cache")] if plugin else ["-p", "no:mlab"]
    # specs/ only: the task_assets link holds tasks' own test modules (clrs's import jax), no spec
    target = "specs" if (folder / "specs").is_dir() else "."
    command = [sys.executable, "-m", "pytest", target, *COLLECT, *extra]
    cpu, started = children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    seconds, cpu = time.perf_counter() - started, children_cpu() - cpu
    items = sum(1 for line in done.stdout.splitlines() if "::" in line)
    if done.returncode != 0 or items < min_items:
        sys.exit(f"pytest failed in {folder} (exit {done.returncode}, {items} items):\n{done.stdout[-3000:]}"
                 f"{done.stderr[-3000:]}")
    return seconds, cpu


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
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in [*projects, "plugin", "no plugin"]}
        if args.runs > 1:  # warm-up: page cache
            for project in projects.values():
                timed(project, min_items=args.specs)
            timed(plain)
        for _ in range(args.runs):
            for name, project in projects.items():
                samples[name].append(timed(project, min_items=args.specs))
            samples["plugin"].append(timed(plain))
            samples["no plugin"].append(timed(plain, plugin=False))
    wall = {name: statistics.median(w for w, _ in values) for name, values in samples.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in samples.items()}
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set, so every run compiles pytest, its plugins and pytest-mlab from "
              "source; users' runs read cached bytecode and are faster (unset it to measure what they see)")
    print(f"collecting {args.specs} Task specs (pytest --collect-only, median of {args.runs}, fresh interpreter each; "
          f"wall time, and CPU time in brackets):")
    for name in projects:
        walls = [w for w, _ in samples[name]]
        print(f"  {name:8s} {args.specs / wall[name]:7.0f} specs/s   {wall[name]:6.2f} s ({cpu[name]:.2f} s CPU) for "
              f"{args.specs} specs   ({wall[name] - wall['plugin']:.2f} s ({cpu[name] - cpu['plugin']:.2f} s CPU) of it "
              f"beyond a run that collects no spec; min {min(walls):.2f} s, max {max(walls):.2f} s)")
    print(f"a run that collects no spec: {wall['plugin']:.3f} s ({cpu['plugin']:.3f} s CPU) with the plugin, "
          f"{wall['no plugin']:.3f} s ({cpu['no plugin']:.3f} s CPU) with -p no:mlab: the plugin adds "
          f"{(wall['plugin'] - wall['no plugin']) * 1000:.0f} ms ({(cpu['plugin'] - cpu['no plugin']) * 1000:.0f} ms "
          f"CPU; {wall['plugin'] / wall['no plugin']:.2f}x)")


if __name__ == "__main__":
    main()

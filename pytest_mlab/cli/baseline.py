"""``pytest-mlab baseline TASK...``: measure a task's baseline the way the paper defines it.

The paper's baseline is the mean score of the baseline agent's runs (the unchanged starter, run
and submitted). This runs the ``baseline`` agent ``--seeds`` times per task on a data variant, in
the sandbox of your choice, and prints the mean, the spread and the tolerance the spread calls
for. ``--write`` records both in the task spec (``baseline: {VARIANT: mean, tolerance: ...}``),
so that ``pytest specs/ --agent=baseline`` afterwards checks the starter still reproduces it.

A task whose baseline is pinned by the paper rather than measured (a skeleton starter: imdb 0.5,
house-price 1e10, ...) keeps its pinned value: do not ``--write`` it.
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.data import default_cache_dir
from pytest_mlab.errors import MlabError

#: The smallest tolerance written: a deterministic starter still needs room for floating-point
#: differences between machines and library versions.
MIN_TOLERANCE = 0.01
#: The tolerance is this many relative standard deviations of the measured scores, so a fresh
#: run of the starter falls inside it with high probability.
SPREAD_FACTOR = 3.0


@dataclass(frozen=True)
class Measured:
    task: str
    variant: str
    scores: tuple[float, ...]
    path: Path  # the task's spec file

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores)

    @property
    def relative_spread(self) -> float:
        """The scores' sample standard deviation over the mean's magnitude (0 for one run)."""
        if len(self.scores) < 2 or self.mean == 0:
            return 0.0
        return statistics.stdev(self.scores) / abs(self.mean)

    @property
    def tolerance(self) -> float:
        """At least MIN_TOLERANCE, else SPREAD_FACTOR spreads, rounded up to two significant digits."""
        wanted = max(MIN_TOLERANCE, SPREAD_FACTOR * self.relative_spread)
        digits = 1 - math.floor(math.log10(wanted))
        return math.ceil(round(wanted * 10 ** digits, 9)) / 10 ** digits  # round: 0.12000000000000001 is 0.12

    def line(self) -> str:
        scores = ", ".join(f"{score:.6g}" for score in self.scores)
        return (f"{self.task} ({self.variant}): {len(self.scores)} run(s) of the starter: {scores}; mean "
                f"{self.mean:.6g}, spread {self.relative_spread:.2%}; baseline: {{{self.variant}: "
                f"{self.mean:.6g}, tolerance: {self.tolerance:g}}}")


def add_command(commands) -> None:
    baseline = commands.add_parser("baseline", help="run the baseline agent on tasks and print (or --write) the "
                                                    "mean score and a tolerance from its spread")
    baseline.add_argument("tasks", nargs="+", metavar="TASK", help="task names, as in specs/tasks")
    baseline.add_argument("--seeds", type=int, default=3, help="runs per task (default: 3)")
    baseline.add_argument("--data", default="mini", metavar="VARIANT", help="data variant (default: mini)")
    baseline.add_argument("--sandbox", default="local", help="sandbox kind the starter runs in (default: local)")
    baseline.add_argument("--write", action="store_true", help="record the mean and tolerance in each task spec")
    baseline.add_argument("--root", type=Path, default=Path("."), help="project root (default: the current folder)")
    baseline.add_argument("--cache", type=Path, default=None, help=f"cache folder (default: {default_cache_dir()})")
    baseline.set_defaults(run=_baseline)


def _baseline(args: argparse.Namespace) -> int:
    if args.seeds < 1:
        raise MlabError(f"--seeds must be at least 1, got {args.seeds}")
    root = args.root.resolve()
    cache = (args.cache or default_cache_dir()).resolve()
    from pytest_mlab.sandbox.owner import owned_prefix

    with tempfile.TemporaryDirectory(prefix=owned_prefix("baseline")) as out:  # swept if this process is killed
        for name in args.tasks:
            measured = measure(root, name, args.data, args.seeds, args.sandbox, cache, Path(out))
            print(measured.line(), flush=True)
            if args.write:
                write_baseline(measured.path, measured)
                print(f"  written to {measured.path}", flush=True)
    return 0


def measure(root: Path, name: str, variant: str, seeds: int, sandbox: str, cache: Path, out: Path) -> Measured:
    """The baseline agent's scores on ``seeds`` runs; any run that does not grade is an error."""
    from pytest_mlab.runner import execute
    from pytest_mlab.spec.plan import Settings, compile_plans
    from pytest_mlab.spec.project import Project

    project = Project(root, root / "specs" / "actions", root / "agents", root / "specs" / "tasks")
    path = project.tasks.raw(name, wanted_by=("TASK", None, "")).path
    task = project.task_from_file(path)
    if variant not in task.data:
        raise MlabError(f"task '{name}' has no '{variant}' data variant; it has: {', '.join(task.data)}")
    agent = project.agent("baseline", wanted_by=("pytest-mlab baseline", None, ""))
    settings = Settings(agents=("baseline",), agents_source="pytest-mlab baseline", llm=None, seeds=seeds,
                        variant=variant, sandbox=sandbox, out_dir=out, cache_dir=cache)
    scores = []
    for plan in compile_plans(task, [(agent, project.agent_actions(agent))], settings):
        result = execute(plan, plan.run_id)
        if result.score is None or not result.valid:
            raise MlabError(f"{plan.run_id}: the starter did not produce a graded submission "
                            f"({result.end_reason}: {result.message}); fix the starter before recording a baseline")
        scores.append(float(result.score))
    return Measured(task.name, variant, tuple(scores), path)


def write_baseline(path: Path, measured: Measured) -> None:
    """Set ``baseline.<variant>`` and ``baseline.tolerance`` in a task spec, keeping every other line
    (and comment) as it is. The ``baseline:`` key must be a block mapping or a one-line flow mapping.
    The tolerance is shared by the task's variants: while another variant has a baseline, the one
    already there is never lowered."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    tolerance = max(measured.tolerance, _shared_tolerance(lines, measured.variant))
    values = {measured.variant: f"{measured.mean:.6g}", "tolerance": f"{tolerance:g}"}
    for index, line in enumerate(lines):
        flow = re.match(r"^baseline:\s*\{(.*)\}\s*(#.*)?$", line.rstrip("\n"))
        if flow:
            entries = dict(part.split(":", 1) for part in flow.group(1).split(",") if ":" in part)
            entries = {key.strip(): value.strip() for key, value in entries.items()}
            entries.update(values)
            lines[index] = "baseline: {" + ", ".join(f"{k}: {v}" for k, v in entries.items()) + "}\n"
            break
        if re.match(r"^baseline:\s*(#.*)?$", line.rstrip("\n")):
            end = index + 1
            while end < len(lines) and lines[end].startswith((" ", "\t")) and lines[end].strip():
                end += 1
            block = lines[index + 1:end]
            indent = next((re.match(r"^(\s+)", item).group(1) for item in block if item.strip()), "  ")
            for key, value in values.items():
                at = next((i for i, item in enumerate(block) if re.match(rf"^\s+{re.escape(key)}\s*:", item)), None)
                new = f"{indent}{key}: {value}\n"
                if at is None:
                    block.append(new)
                else:
                    block[at] = new
            lines[index + 1:end] = block
            break
    else:
        raise MlabError(f"{path}: no top-level 'baseline:' key to update; add 'baseline: {{}}' first")
    path.write_text("".join(lines), encoding="utf-8")


def _shared_tolerance(lines: list[str], variant: str) -> float:
    """The spec's ``baseline.tolerance`` when another variant's baseline relies on it, else 0."""
    import yaml

    try:
        baseline = (yaml.safe_load("".join(lines)) or {}).get("baseline") or {}
        others = set(baseline) - {variant, "tolerance"}
        return float(baseline.get("tolerance", 0.0)) if others else 0.0
    except (yaml.YAMLError, AttributeError, TypeError, ValueError):
        return 0.0

"""``pytest-mlab baseline TASK...``: measure a task's baseline the way the paper defines it.

The paper's baseline is the mean score of the baseline agent's runs (the unchanged starter, run
and submitted). This runs the ``baseline`` agent ``--runs`` times per task on a data variant, in
the sandbox of your choice, and prints the mean, the spread and the tolerance the spread calls
for. ``--write`` records the scores, where and when they were measured, in the task's baselines
file (``specs/baselines/TASK.yaml`` unless the spec's ``baseline.measured`` names another), which
the spec reads; so ``pytest specs/ --agent=baseline`` afterwards checks the starter still
reproduces it. Nobody edits those numbers by hand: the file's mean and tolerance are checked
against its scores.

A variant whose baseline is pinned (``baseline.pinned``: the paper's value for a skeleton
starter, imdb 0.5, house-price 1e10, ...) is not measured over: ``--write`` refuses it.

``--add`` adds the new runs to the variant's recorded scores instead of replacing them, so the
paper's 8 runs of a task that trains for an hour can be measured in parts. The parts must be one
sample: the same sandbox kind, the same machine (hostname, Python, CPU count, GPUs), and the
task's spec and assets unchanged since the recorded commit. All of it is checked before anything
runs.

``--check`` runs nothing: it says, for every recorded variant of the named tasks (all tasks when
none is named), whether the task is still as it was at the commit its runs were measured at, and
exits 1 when one is not. A baseline measured on an earlier version of a task is a number nobody
measured: the project's own tests run this check over the catalogue.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.cache_home import default_cache_dir
from pytest_mlab.errors import MlabError
from pytest_mlab.spec.baselines import Measurement, default_file, read_baselines, scored_differences, write_baselines

#: What a measurement records of where it ran: the machine, and the Python the starter ran with.
MACHINE_KEYS = ("hostname", "platform", "python", "cpus", "gpus", "agents_python")
#: What must match for runs measured at two times to count as one sample (``--add``).
SAME_MACHINE = ("hostname", "python", "cpus", "gpus", "agents_python")


@dataclass(frozen=True)
class Measured:
    task: str
    variant: str
    measurement: Measurement
    path: Path  # the task's spec file

    def line(self) -> str:
        m = self.measurement
        scores = ", ".join(f"{score:.6g}" for score in m.scores)
        return (f"{self.task} ({self.variant}): {len(m.scores)} run(s) of the starter: {scores}; mean "
                f"{m.mean:.6g}, spread {m.relative_spread:.2%}; tolerance {m.tolerance:g}")


def add_command(commands) -> None:
    baseline = commands.add_parser("baseline", help="run the baseline agent on tasks and print (or --write) the "
                                                    "mean score and a tolerance from its spread")
    baseline.add_argument("tasks", nargs="*", metavar="TASK",
                          help="task names, as in specs/tasks (with --check: all tasks when none is named)")
    baseline.add_argument("--runs", "--seeds", dest="runs", type=int, default=3,
                          help="runs of the starter per task (default: 3; the paper used 8)")
    baseline.add_argument("--data", default="mini", metavar="VARIANT", help="data variant (default: mini)")
    baseline.add_argument("--sandbox", default="local", help="sandbox kind the starter runs in (default: local)")
    baseline.add_argument("--write", action="store_true",
                          help="record the scores in each task's baselines file, which its spec reads")
    baseline.add_argument("--add", action="store_true",
                          help="with --write: add these runs to the variant's recorded scores instead of replacing "
                               "them (same machine and sandbox, task unchanged since the recorded commit)")
    baseline.add_argument("--check", action="store_true",
                          help="run nothing: say whether each recorded baseline was measured on the task as it is "
                               "now (exit status 1 when one was not)")
    baseline.add_argument("--root", type=Path, default=Path("."), help="project root (default: the current folder)")
    baseline.add_argument("--cache", type=Path, default=None, help=f"cache folder (default: {default_cache_dir()})")
    baseline.set_defaults(run=_baseline)


def _baseline(args: argparse.Namespace) -> int:
    if args.check:
        if args.write or args.add:
            raise MlabError("--check only reads the recorded baselines: leave out --write and --add")
        return check_current(args.root.resolve(), args.tasks)
    if not args.tasks:
        raise MlabError("name the tasks to measure, e.g. pytest-mlab baseline clrs --data mini --runs 3")
    if args.runs < 1:
        raise MlabError(f"--runs must be at least 1, got {args.runs}")
    if args.add and not args.write:
        raise MlabError("--add adds runs to a recorded baseline: use it together with --write")
    root = args.root.resolve()
    cache = (args.cache or default_cache_dir()).resolve()
    from pytest_mlab.sandbox.owner import owned_prefix

    # every task's recorded scores are checked before the first run: a refusal after an hour of
    # training would waste it
    earlier = {name: recorded_to_extend(root, name, args.data, args.sandbox) for name in args.tasks} \
        if args.add else {}
    with tempfile.TemporaryDirectory(prefix=owned_prefix("baseline")) as out:  # swept if this process is killed
        for name in args.tasks:
            measured = measure(root, name, args.data, args.runs, args.sandbox, cache, Path(out), check=args.write)
            print(measured.line(), flush=True)
            if name in earlier:
                measured = extended(earlier[name], measured)
                print(f"  with the {len(earlier[name].scores)} recorded run(s): " + measured.line(), flush=True)
            if args.write:
                written = record(measured)
                print(f"  written to {os.path.relpath(written)}", flush=True)
    return 0


def recorded_to_extend(root: Path, name: str, variant: str, sandbox: str) -> Measurement:
    """The variant's recorded measurement, when runs measured now can join it as one sample; an
    MlabError saying why not otherwise."""
    from pytest_mlab.results.environment import describe_environment

    project = project_at_root(root)
    spec = task_spec_path(project, name)
    _relative, file = baselines_file(spec, name)
    if not file.is_file():
        raise MlabError(f"--add: task '{name}' has no baselines file yet ({os.path.relpath(file)}); "
                        f"measure it first without --add")
    recorded = read_baselines(file, name, os.path.relpath(file)).get(variant)
    if recorded is None:
        raise MlabError(f"--add: {os.path.relpath(file)} has no '{variant}' baseline to add to; measure it first "
                        f"without --add")
    if recorded.sandbox != sandbox:
        raise MlabError(f"--add: the recorded '{variant}' runs of '{name}' ran in the '{recorded.sandbox}' sandbox, "
                        f"these would run in '{sandbox}'; pass --sandbox={recorded.sandbox} or measure anew")
    here = describe_environment(root)
    differ = [f"{key} {recorded.machine.get(key)!r} there, {here[key]!r} here" for key in SAME_MACHINE
              if recorded.machine.get(key) != here[key]]
    if differ:
        raise MlabError(f"--add: the recorded '{variant}' runs of '{name}' were measured on another machine "
                        f"({'; '.join(differ)}); scores from two machines are not one sample: measure anew "
                        f"without --add")
    changed = _changed_since(root, recorded.commit, spec, project.task_from_file(spec).assets)
    if changed:
        raise MlabError(f"--add: the task changed since the recorded runs (commit {recorded.commit[:12] or '?'}): "
                        f"{changed}; the starter may score differently now: measure anew without --add")
    return recorded


def check_current(root: Path, names: list[str]) -> int:
    """Print whether each recorded variant of ``names`` (every task, when empty) was measured on the
    task as it is now; 1 when one was not (or that cannot be told), else 0."""
    project = project_at_root(root)
    named = bool(names)
    stale = 0
    for name in names or project.tasks.names():
        spec = task_spec_path(project, name)
        _relative, file = baselines_file(spec, name)
        shown = os.path.relpath(file, root)
        if not file.is_file():
            if named:
                print(f"{name}: no recorded baseline ({shown} does not exist)")
            continue
        assets = project.task_from_file(spec).assets
        for variant, recorded in sorted(read_baselines(file, name, shown).items()):
            where = f"{len(recorded.scores)} run(s) at commit {recorded.commit[:12] or '?'}, {recorded.sandbox} sandbox"
            changed = ", ".join(filter(None, (_changed_since(root, recorded.commit, spec, assets),
                                              _other_agents_python(recorded.machine)))) or None
            if changed is None:
                print(f"{name} ({variant}): current ({where})")
                continue
            stale += 1
            print(f"{name} ({variant}): STALE ({where}); since then: {changed}\n"
                  f"  measure it again: pytest-mlab baseline {name} --data {variant} --runs "
                  f"{max(3, len(recorded.scores))} --sandbox {recorded.sandbox or 'local'} --write")
    return 1 if stale else 0


def _other_agents_python(machine: dict) -> str | None:
    """Why the Python the starter ran with differs from the one agents' scripts run with now (a
    changed lock can move the starter's score), or None when it is the same."""
    from pytest_mlab.task_runtime.choice import describe

    then, now = machine.get("agents_python"), describe()
    if then == now:
        return None
    return f"the agents' Python ({then or 'not recorded'} then, {now} now)"


def _changed_since(root: Path, commit: str, spec: Path, assets: Path) -> str | None:
    """What differs in the task between ``commit`` and the working tree, or why that cannot be told;
    None when nothing does. Left out: the spec's keys that cannot move the score (``scored_differences``), the reference
    solution (``reference/`` of the assets), which the baseline agent never runs, and which module
    of pytest_mlab a task file imports a name from (``_same_but_harness_imports``)."""
    if not commit or commit == "unknown":
        return "the recorded runs name no commit to compare with"
    paths = ("--", str(assets), f":(exclude){assets / 'reference'}")
    try:
        changed = _git(root, "diff", "--name-only", commit, *paths).split()
        changed += _git(root, "ls-files", "--others", "--exclude-standard", *paths).split()
        inside = _git(root, "ls-files", "--full-name", "--error-unmatch", str(spec)).strip()
        then = _git(root, "show", f"{commit}:{inside}")
        changed = [path for path in changed if not _same_but_harness_imports(root, commit, path)]
    except MlabError as exc:
        return str(exc)
    import yaml

    if scored_differences(yaml.safe_load(then), yaml.safe_load(spec.read_text(encoding="utf-8"))):
        changed.insert(0, os.path.relpath(spec, root))
    return ", ".join(changed) or None


def _same_but_harness_imports(root: Path, commit: str, path: str) -> bool:
    """Whether a changed Python file of the task differs from ``commit`` only in where it imports
    pytest_mlab's names from (the same names bound): where the harness keeps a helper is the
    harness's business, which this check never compares, as it never compares the harness's code."""
    if not path.endswith(".py") or not (root / path).is_file():
        return False
    try:
        then = _git(root, "show", f"{commit}:{path}")
    except MlabError:
        return False  # new since then
    before, now = _without_harness_imports(then), _without_harness_imports((root / path).read_text(encoding="utf-8"))
    return before is not None and before == now


def _without_harness_imports(source: str) -> tuple[str, tuple[str, ...]] | None:
    """The source less its imports of pytest_mlab, and the names those imports bind; None when it
    cannot be parsed (then any change counts)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    dropped: set[int] = set()
    bound: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "pytest_mlab":
            names = [alias.asname or alias.name for alias in node.names]
        elif isinstance(node, ast.Import) and all(alias.name.split(".")[0] == "pytest_mlab" for alias in node.names):
            names = [alias.asname or alias.name for alias in node.names]
        else:
            continue
        bound += names
        dropped.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    kept = "\n".join(line for number, line in enumerate(source.splitlines(), 1) if number not in dropped)
    return kept, tuple(sorted(bound))


def _git(root: Path, *arguments: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), *arguments], capture_output=True, text=True, timeout=60,
                              check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise MlabError(f"git could not compare them ({exc})") from None
    if done.returncode != 0:
        raise MlabError(f"git could not compare them ({done.stderr.strip() or f'exit status {done.returncode}'})")
    return done.stdout


def extended(earlier: Measurement, now: Measured) -> Measured:
    """``now``'s runs added to the recorded ones; when and at which commit are the latest part's."""
    m = now.measurement
    joined = Measurement(earlier.scores + m.scores, m.sandbox, m.measured, m.commit, m.machine)
    return Measured(now.task, now.variant, joined, now.path)


def project_at_root(root: Path):
    from pytest_mlab.spec.project import Project

    return Project(root, root / "specs" / "actions", root / "agents", root / "specs" / "tasks")


def task_spec_path(project, name: str) -> Path:
    """The spec file of task ``name``; an error naming the tasks there when there is none."""
    return project.tasks.raw(name, wanted_by=("TASK", None, "")).path


def measure(root: Path, name: str, variant: str, runs: int, sandbox: str, cache: Path, out: Path, *,
            check: bool = False) -> Measured:
    """The baseline agent's scores on ``runs`` runs; any run that does not grade is an error.
    ``check``: refuse up front a variant whose baseline is pinned (it is not to be measured over)."""
    from pytest_mlab.results.environment import describe_environment
    from pytest_mlab.runner import execute
    from pytest_mlab.sandbox.gpus import GpuPool
    from pytest_mlab.spec.plan import Settings, compile_plans

    project = project_at_root(root)
    path = task_spec_path(project, name)
    task = project.task_from_file(path)
    if variant not in task.data:
        raise MlabError(f"task '{name}' has no '{variant}' data variant; it has: {', '.join(task.data)}")
    if check and variant in task.baseline_pinned:
        raise MlabError(f"task '{name}' pins its '{variant}' baseline at {task.baseline[variant]:g} "
                        f"({task.baseline_origins.get(variant, task.source)}); a measured one would contradict it: "
                        f"remove the pin first if the starter is meant to be measured")
    agent = project.agent("baseline", wanted_by=("pytest-mlab baseline", None, ""))
    settings = Settings(agents=("baseline",), agents_source="pytest-mlab baseline", llm=None, seeds=runs,
                        variant=variant, sandbox=sandbox, out_dir=out, cache_dir=cache)
    pool = GpuPool.on_this_machine(None)  # every GPU here, one per run: the paper ran starters on a GPU
    scores = []
    for plan in compile_plans(task, [(agent, project.agent_actions(agent))], settings):
        with pool.lease(plan.run_id, required=plan.needs_gpu) as lease:
            result = execute(plan, plan.run_id, gpus=lease.ids)
        if result.score is None or not result.valid:
            raise MlabError(f"{plan.run_id}: the starter did not produce a graded submission "
                            f"({result.end_reason}: {result.message}); fix the starter before recording a baseline")
        scores.append(float(result.score))
    where = describe_environment(root)
    machine = {key: where[key] for key in MACHINE_KEYS}
    measurement = Measurement(tuple(scores), sandbox, time.strftime("%Y-%m-%dT%H:%M:%S%z"), where["commit"], machine)
    return Measured(task.name, variant, measurement, path)


def record(measured: Measured) -> Path:
    """Write the measurement into the task's baselines file and make the spec read that file: its
    ``baseline.measured`` is added when missing, and a value written in the spec for the same
    variant is removed (a variant has one baseline). Returns the baselines file."""
    relative, file = baselines_file(measured.path, measured.task)
    write_baselines(file, measured.task, {measured.variant: measured.measurement})
    edit_baseline_mapping(measured.path, set_values={"measured": relative}, remove=(measured.variant,))
    return file


def baselines_file(spec: Path, task: str) -> tuple[str, Path]:
    """The baselines file the spec names (or the default one), as written in the spec and as a path."""
    import yaml

    try:
        baseline = (yaml.safe_load(spec.read_text(encoding="utf-8")) or {}).get("baseline")
    except yaml.YAMLError as exc:
        raise MlabError(f"{spec}: cannot read the spec to find its baselines file: {exc}") from None
    baseline = baseline if isinstance(baseline, dict) else {}
    if isinstance(baseline.get("measured"), str):
        return baseline["measured"], spec.parent / baseline["measured"]
    return default_file(spec, task)


def edit_baseline_mapping(path: Path, set_values: dict[str, str], remove: tuple[str, ...] = ()) -> None:
    """Set and remove keys of the spec's top-level ``baseline:`` mapping, keeping every other line
    (and comment) as it is. It must be a block mapping or a one-line flow mapping; a spec without
    one gets a block at its end."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for index, line in enumerate(lines):
        flow = re.match(r"^baseline:\s*\{(.*)\}\s*(#.*)?$", line.rstrip("\n"))
        if flow:
            entries = _flow_entries(flow.group(1))
            if entries is None:
                break  # nested flow mappings: rewritten as a block below
            entries = {key: value for key, value in entries.items() if key not in remove}
            entries.update(set_values)
            lines[index] = "baseline: {" + ", ".join(f"{k}: {v}" for k, v in entries.items()) + "}\n"
            path.write_text("".join(lines), encoding="utf-8")
            return
        if re.match(r"^baseline:\s*(#.*)?$", line.rstrip("\n")):
            end = index + 1
            while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
                end += 1
            while end > index + 1 and not lines[end - 1].strip():
                end -= 1
            block = lines[index + 1:end]
            indent = next((re.match(r"^(\s+)", item).group(1) for item in block if item.strip()), "  ")
            block = [item for item in block if not any(re.match(rf"^{indent}{re.escape(key)}\s*:", item)
                                                       for key in remove)]
            for key, value in set_values.items():
                at = next((i for i, item in enumerate(block) if re.match(rf"^{indent}{re.escape(key)}\s*:", item)),
                          None)
                new = f"{indent}{key}: {value}\n"
                if at is None:
                    block.append(new)
                else:
                    block[at] = new
            lines[index + 1:end] = block
            path.write_text("".join(lines), encoding="utf-8")
            return
    if not any(re.match(r"^baseline\s*:", line) for line in lines):
        ending = "" if not lines or lines[-1].endswith("\n") else "\n"
        added = "".join(f"  {key}: {value}\n" for key, value in set_values.items())
        path.write_text("".join(lines) + ending + "baseline:\n" + added, encoding="utf-8")
        return
    raise MlabError(f"{path}: the 'baseline:' key must be a block mapping or a one-line mapping of plain values "
                    f"to be updated; write 'baseline:' on its own line with its entries indented below, or add "
                    f"'measured: {set_values.get('measured', '...')}' under it yourself")


def _flow_entries(body: str) -> dict[str, str] | None:
    """``{a: 1, b: 2}``'s entries as written; None when a value is itself a flow collection."""
    if any(bracket in body for bracket in "{}[]"):
        return None
    entries = dict(part.split(":", 1) for part in body.split(",") if ":" in part)
    return {key.strip(): value.strip() for key, value in entries.items()}

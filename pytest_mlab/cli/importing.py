"""``pytest-mlab import PATH... --out DIR``: runs of the original MLAgentBench, from their log
folders (one run, a folder of runs, or an archive), into a results folder of ours: run folders
with traces and snapshots, results.json, the CSVs and report.html. ``pytest-mlab report`` then
shows them beside our own runs, and ``--mlab-compare DIR/results.json`` gates on them.

A run that cannot be imported is named with its file and what is wrong, and the others are
imported all the same; the exit code is 1 when any could not be, 2 when none could.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from pytest_mlab.cache_home import default_cache_dir
from pytest_mlab.errors import MlabError, UsageError
from pytest_mlab.sandbox.owner import owned_prefix
from pytest_mlab.sandbox.registry import SANDBOX_KINDS


def add_command(commands) -> None:
    command = commands.add_parser("import", help="import runs of the original MLAgentBench from their log folders "
                                                 "into a results folder of ours")
    command.add_argument("paths", type=Path, nargs="+", metavar="PATH",
                         help="a run's log folder, a folder of runs (any depth), or a .tar/.tar.gz/.tgz/.zip of them")
    command.add_argument("--out", type=Path, required=True, help="results folder to write (rows already there stay)")
    command.add_argument("--root", type=Path, default=Path("."), help="project root (default: the current folder)")
    command.add_argument("--tasks-dir", default="specs/tasks", help="Task specs folder, relative to the root")
    command.add_argument("--data", default="full", metavar="VARIANT",
                         help="the data variant the runs used (default: full, the real data the original ran on)")
    command.add_argument("--cache", type=Path, default=None, help=f"cache folder (default: {default_cache_dir()})")
    command.add_argument("--agent", default=None,
                         help="file every run under this agent, with --llm or no model (default: the paper's "
                              "experiment names mapped to ours, else the experiment's name)")
    command.add_argument("--llm", default=None, help="file every run under this model (default: as for --agent)")
    command.add_argument("--task-map", action="append", default=[], metavar="OLD=TASK",
                         help="a task the logs name OLD (a fork's renamed task) is this project's TASK; repeatable")
    command.add_argument("--scores", type=Path, action="append", default=[], metavar="EVAL_JSON",
                         help="the original eval.py's output: its final_score stands for a run whose final "
                              "workspace cannot be graded here; repeatable")
    command.add_argument("--sandbox", default="auto", choices=SANDBOX_KINDS,
                         help="where a task's measure step runs the imported code (default: auto)")
    command.set_defaults(run=_import)


def _task_map(pairs: list[str]) -> dict[str, str]:
    mapped = {}
    for pair in pairs:
        old, _, new = pair.partition("=")
        if not old or not new:
            raise UsageError(f"--task-map {pair!r}: expected OLD=TASK, e.g. --task-map cifar10-v2=cifar10")
        mapped[old] = new
    return mapped


def _import(args: argparse.Namespace) -> int:
    from pytest_mlab.cli.baseline import project_at_root, task_spec_path
    from pytest_mlab.original_logs.importer import ImportSettings, import_runs, read_recorded_scores
    from pytest_mlab.original_logs.layout import find_runs, is_archive, unpack
    from pytest_mlab.results.report import write_session_outputs

    project = project_at_root(args.root.resolve())
    names = set(project.tasks.names())
    tasks = {name: (lambda name=name: project.task_from_file(task_spec_path(project, name))) for name in names}
    recorded: dict[str, float] = {}
    for path in args.scores:
        recorded.update(read_recorded_scores(path))
    out = args.out.resolve()
    settings = ImportSettings(out=out, variant=args.data, cache=(args.cache or default_cache_dir()).resolve(),
                              sandbox=args.sandbox, agent=args.agent, llm=args.llm, task_map=_task_map(args.task_map),
                              recorded=recorded)
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix=owned_prefix("import")) as scratch:
        found = []
        for path in args.paths:
            try:
                if not path.exists():
                    raise MlabError(f"{path}: no such file or folder")
                folder = unpack(path, Path(scratch)) if is_archive(path) else path
                runs = find_runs(folder, str(path))
                if not runs:
                    raise MlabError(f"{path}: no run of the original MLAgentBench here (no env_log/trace.json "
                                    "below it)")
                found += runs
            except MlabError as exc:
                problems.append(str(exc))
        imported = import_runs(found, tasks, settings)
    problems += imported.problems
    for run in imported.runs:
        print(f"{run.imported_from}: {run.run_id}: {run.message}")
    for problem in problems:
        print(f"pytest-mlab import: not imported: {problem}", file=sys.stderr)
    if not imported.runs:
        print("pytest-mlab import: no run imported", file=sys.stderr)
        return 2
    outputs = write_session_outputs(out, imported.runs, {"imported": [str(path) for path in args.paths],
                                                          "variant": args.data, "sandbox": "imported",
                                                          "cache_dir": str(settings.cache)})
    print(f"imported {len(imported.runs)} run(s) of {len(imported.runs) + len(imported.problems)} found: "
          f"{outputs.results}, {outputs.report}")
    return 1 if problems else 0

"""``pytest-mlab report DIR`` and ``pytest-mlab rescore DIR``: work on saved results, no rerun.

``report`` rebuilds results.json (with the current aggregation), the CSVs, plots and
report.html from one or more results folders: their results.json and their run folders, whose
traces end with the full row, so a folder whose results.json was lost or overwritten still counts. ``rescore`` first re-grades every run's saved final snapshot with its task's
current grader and baseline (after a grader fix), then does the same; a task's measure step
runs the agent's code again, in the session's sandbox kind unless ``--sandbox`` says otherwise.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from pytest_mlab.cache_home import default_cache_dir
from pytest_mlab.data.cache import PreparedData
from pytest_mlab.errors import MlabError
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.store import load_results
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.sandbox.registry import SANDBOX_KINDS


def add_commands(commands) -> None:
    report = commands.add_parser("report", help="rebuild results.json, CSVs, plots and report.html from saved "
                                                "results and run folders, of one session or several")
    report.add_argument("folders", type=Path, nargs="+", metavar="DIR",
                        help="results folders (--mlab-out of sessions); a run in several: the newest counts")
    report.add_argument("--out", type=Path, default=None,
                        help="where to write the outputs (default: the first DIR)")
    report.set_defaults(run=_report)
    rescore = commands.add_parser("rescore", help="re-grade every saved final snapshot, then rewrite the results")
    rescore.add_argument("out", type=Path, metavar="DIR", help="a results folder (--mlab-out of a session)")
    rescore.add_argument("--root", type=Path, default=Path("."), help="project root (default: the current folder)")
    rescore.add_argument("--tasks-dir", default="specs/tasks", help="Task specs folder, relative to the root")
    rescore.add_argument("--cache", type=Path, default=None, help=f"cache folder (default: {default_cache_dir()})")
    rescore.add_argument("--sandbox", default=None, choices=SANDBOX_KINDS,
                         help="where measure steps run the agents' code again (default: the session's --sandbox)")
    rescore.set_defaults(run=_rescore)


def _report(args: argparse.Namespace) -> int:
    from pytest_mlab.results.merge import rebuilt_results
    from pytest_mlab.results.report import write_outputs

    found = rebuilt_results(args.folders)
    if not found.runs:
        raise MlabError(f"no graded run in {', '.join(map(str, args.folders))}: nothing to report")
    outputs = write_outputs(args.out or args.folders[0], found.runs, found.settings)
    left_out = f"; {found.unfinished} run folder(s) without a result (killed mid-run) left out" if found.unfinished else ""
    print(f"{len(found.runs)} run(s): {outputs.results}, {outputs.report}, {len(outputs.plots)} plot(s){left_out}")
    return 0


def _rescore(args: argparse.Namespace) -> int:
    from pytest_mlab.data import prepare_data
    from pytest_mlab.sandbox.registry import sandbox_unavailable
    from pytest_mlab.results.report import write_outputs
    from pytest_mlab.spec.builders import build_task
    from pytest_mlab.spec.library import SpecLibrary

    saved = load_results(args.out)
    root = args.root.resolve()
    library = SpecLibrary("Task", [root / args.tasks_dir])
    settings = saved.get("settings") or {}
    cache = (args.cache or (Path(settings["cache_dir"]) if settings.get("cache_dir") else default_cache_dir())).resolve()
    sandbox = args.sandbox or settings.get("sandbox") or "auto"
    unavailable = sandbox_unavailable(sandbox)
    if unavailable is not None:
        raise MlabError(f"cannot rescore with --sandbox={sandbox}: {unavailable} (choose another with --sandbox)")
    tasks, changed, runs = {}, 0, []
    for run in saved["runs"]:
        if run.task not in tasks:
            try:
                tasks[run.task] = build_task(library.raw(run.task, wanted_by=("results.json", None, "")), library, root)
            except MlabError as exc:
                raise MlabError(f"cannot rescore {run.run_id}: {exc} (pass --root with the project that ran it)") from None
        task = tasks[run.task]
        new = _rescored(run, task, prepare_data(task, run.variant, cache), sandbox)
        if (new.score, new.passed, new.success) != (run.score, run.passed, run.success):
            changed += 1
            print(f"{run.run_id}: {run.message} -> {new.message}")
        runs.append(new)
    outputs = write_outputs(args.out, runs, settings)
    print(f"rescored {len(runs)} run(s), {changed} changed: {outputs.results}, {outputs.report}")
    return 0


def _rescored(result: RunResult, task: TaskSpec, data: PreparedData, sandbox: str) -> RunResult:
    """The same run judged again with the task's current grader and baseline."""
    from pytest_mlab.grading.rescore import regrade_final

    if not result.run_dir:
        return result  # the harness failed before the run: nothing was graded, nothing to redo
    again = regrade_final(task, Path(result.run_dir), data, sandbox=sandbox, label=result.run_id,
                          variant=result.variant, end_reason=result.end_reason, expect=result.expect,
                          message=result.message)
    if again is None:
        return result
    grade, verdict, baseline = again
    return replace(result, score=grade.score, baseline=baseline, valid=grade.valid,
                   invalid_reason=grade.invalid_reason, improvement=verdict.improvement, success=verdict.success,
                   passed=verdict.passed, failure=verdict.failure, message=verdict.message)

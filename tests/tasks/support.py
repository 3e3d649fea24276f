"""Helpers for the task tests (tests/tasks, the tool tasks and the grading attacks): load a task's
spec and the functions it names, prepare its mini data, build a workspace (env/ + public data), run
``python train.py`` in it and grade it: by calling the task's grader directly, or, for a task whose
grader needs the agent's code run, through the harness's grading path (see ``grade``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

from pytest_mlab.task_api import InvalidSubmission

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASSETS = ROOT / "task_assets"
SPECS = ROOT / "specs" / "tasks"
SEED = 0  # the seed the harness passes to prepare.mini
SCRIPT_LIMIT_S = 60  # starter and reference must each finish within a minute
MEASURE_SANDBOX = "auto"  # where graders' measure steps run the submitted code (bwrap where it works)


def load_spec(task: str) -> dict:
    return yaml.safe_load((SPECS / f"{task}.yaml").read_text())


def load_function(task: str, ref: str):
    """Resolve a spec reference "FILE.py:FUNCTION" relative to the task's assets folder."""
    filename, function = ref.split(":")
    path = ASSETS / task / filename
    module_name = f"_mlab_smoke_{task}_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return getattr(module, function)


def prepare(task: str, root: pathlib.Path, seed: int = SEED) -> tuple[pathlib.Path, pathlib.Path]:
    """Run the task's prepare.mini into root/public and root/hidden."""
    public, hidden = root / "public", root / "hidden"
    public.mkdir(parents=True)
    hidden.mkdir(parents=True)
    load_function(task, load_spec(task)["data"]["mini"]["prepare"])(public, hidden, seed)
    return public, hidden


def make_workspace(task: str, public: pathlib.Path, dest: pathlib.Path,
                   reference: bool = False) -> pathlib.Path:
    """env/ + public data files; with reference=True the reference files are written over it."""
    shutil.copytree(ASSETS / task / "env", dest)
    shutil.copytree(public, dest, dirs_exist_ok=True)
    if reference:
        shutil.copytree(ASSETS / task / "reference", dest, dirs_exist_ok=True)
    return dest


def run_script(workspace: pathlib.Path, script: str = "train.py") -> tuple[str, float]:
    """Run ``python <script>`` with the workspace as cwd; return (stdout, seconds)."""
    start = time.perf_counter()
    completed = subprocess.run([sys.executable, script], cwd=workspace, capture_output=True, text=True,
                               timeout=5 * SCRIPT_LIMIT_S, stdin=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    assert completed.returncode == 0, f"{script} failed:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout, elapsed


def edited_workspace(task: str, script: str, tmp_path: pathlib.Path, *replacements: tuple[str, str]) -> pathlib.Path:
    """env/ (links followed, as the harness does) plus the reference tool, with text replacements."""
    folder = tmp_path / "ws"
    shutil.copytree(ASSETS / task / "env", folder)
    code = (ASSETS / task / "reference" / script).read_text()
    for old, new in replacements:
        assert old in code, old
        code = code.replace(old, new)
    (folder / script).write_text(code)
    return folder


def task_spec(task: str):
    """The task as the harness builds it from specs/tasks/<task>.yaml."""
    from pytest_mlab.spec.project import Project

    return Project(ROOT, ROOT / "specs" / "actions", ROOT / "agents", SPECS).task_from_file(SPECS / f"{task}.yaml")


def grade(task: str, workspace: pathlib.Path, hidden: pathlib.Path, *, sandbox: str = MEASURE_SANDBOX,
          rounds: int | None = None) -> float:
    """The task's score for ``workspace``; an invalid submission raises InvalidSubmission.

    A task whose grader needs the agent's code run (``metric.measure``) is graded as the harness
    grades a run: ``workspace`` is snapshotted, the measure step runs its code in a ``sandbox`` of
    that kind, and the grader runs in its own process on plain data; the agent's code never runs
    in this process. Other graders are called directly. The public data is the folder
    ``public`` beside ``hidden`` (as :func:`prepare` makes them), if there is one. ``rounds``
    replaces a timed task's rounds (``timing.repeats``), for a test of what the grader says about the
    output rather than the time: one round runs every execution once.
    """
    spec = task_spec(task)
    if rounds is not None:
        measure = dataclasses.replace(spec.metric.measure, timing_repeats=rounds)
        spec = dataclasses.replace(spec, metric=dataclasses.replace(spec.metric, measure=measure))
    if spec.metric.measure is None:
        return load_function(task, load_spec(task)["metric"]["grader"])(workspace, hidden)
    from pytest_mlab.data.cache import PreparedData
    from pytest_mlab.grading.grader import grade_snapshot
    from pytest_mlab.sandbox.base import SandboxOptions
    from pytest_mlab.trace import SnapshotStore

    with tempfile.TemporaryDirectory(prefix="mlab-test-grade-") as scratch:
        public = hidden.parent / "public"
        if not public.is_dir():
            public = pathlib.Path(scratch, "public")
            public.mkdir()
        data = PreparedData(public, hidden)
        store = SnapshotStore(pathlib.Path(scratch, "snapshots"))
        snapshot = store.snapshot(workspace, link_paths=data.public_files()).id
        result = grade_snapshot(spec, store, snapshot, data, sandbox=sandbox,
                                options=SandboxOptions.for_task(spec, spec.limits, f"test-{task}"))
    if not result.valid:
        raise InvalidSubmission(result.invalid_reason)
    return result.score


def tree_digest(folder: pathlib.Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}

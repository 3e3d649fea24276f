"""Tiny tasks with a measure step, built in a temporary folder, for tests of the measure step, the
timing arithmetic and the attacks on grading: fast to run on every backend. Also a measured/ folder
written by hand, and a bare task spec for the verdict's tests."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.grading.grader import Grade, grade_snapshot
from pytest_mlab.grading.measure import measure
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.spec.models import FunctionRef, Limits, Measure, Metric, TaskSpec
from pytest_mlab.trace import SnapshotStore

# A tiny timed task, shaped like vectorization: work.py's compute(n) is timed against the
# starter's (a plain Python loop of about a second of CPU), and its answer must be right.
TIMED_STARTER = textwrap.dedent('''
    def compute(n):
        total = 0
        for i in range(n):
            total += i * i % 7
        return total
''')
TIMED_FAST = ("def compute(n):\n    full, rest = divmod(n, 7)\n"
              "    return full * 14 + sum(i * i % 7 for i in range(rest))\n")
TIMED_N = 3_000_000
TIMED_MEASURE = textwrap.dedent('''
    import json, os
    import mlab_measure
    inputs, out = mlab_measure.folders()
    if mlab_measure.overhead_phase():
        mlab_measure.finish(out)
    n = json.load(open(os.path.join(inputs, "n.json")))["n"]
    try:
        work = mlab_measure.import_workspace("work")
        value = work.compute(n)
    except BaseException:
        mlab_measure.failure(out, "compute", "work.py")
    json.dump({"value": value}, open(os.path.join(out, "answer.json"), "w"))
    mlab_measure.finish(out)
''')
TIMED_GRADER = textwrap.dedent('''
    import json, pathlib
    from pytest_mlab.task_api import InvalidSubmission, executions, relative_time

    def score(workspace, answers, measured):
        expected = json.loads((pathlib.Path(answers) / "expected.json").read_text())["value"]
        for run in executions(measured):
            result = run.result()
            if result is None or "error" in result:
                raise InvalidSubmission("work.py: " + (result or {}).get("detail", run.failure("compute")))
            answer = json.loads((run.out / "answer.json").read_text())["value"]
            if answer != expected:
                raise InvalidSubmission(f"work.py: compute returned {answer!r} in timed run {run.index + 1}")
        return relative_time(measured, "work.py")
''')


@dataclass
class TinyTask:
    task: TaskSpec
    data: PreparedData
    root: Path

    def snapshot(self, files: dict[str, str | bytes], links: dict[str, str] | None = None) -> tuple[SnapshotStore, str]:
        """A snapshot of a workspace holding ``files`` (path -> content), the public data linked
        as the runner links it, and ``links`` (path -> symlink target)."""
        workspace = self.root / f"workspace-{len(list(self.root.glob('workspace-*')))}"
        workspace.mkdir()
        for relative in self.data.public_files():
            (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
            (workspace / relative).hardlink_to(self.data.public / relative)
        for relative, content in files.items():
            (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                (workspace / relative).write_bytes(content)
            else:
                (workspace / relative).write_text(content)
        for relative, target in (links or {}).items():
            (workspace / relative).parent.mkdir(parents=True, exist_ok=True)
            (workspace / relative).symlink_to(target)
        store = SnapshotStore(self.root / "snapshots")
        return store, store.snapshot(workspace, link_paths=self.data.public_files()).id

    def measure(self, kind: str, files: dict[str, str | bytes], links: dict[str, str] | None = None) -> Path:
        """The measure step on a workspace of ``files``; returns the measured folder."""
        store, snapshot = self.snapshot(files, links)
        dest = self.root / f"measured-{len(list(self.root.glob('measured-*')))}"
        return measure(self.task, store, snapshot, self.data, kind, self.options(), dest)

    def grade(self, kind: str, files: dict[str, str | bytes], links: dict[str, str] | None = None) -> Grade:
        """The whole grading path: snapshot, measure step, grader in its own process."""
        store, snapshot = self.snapshot(files, links)
        return grade_snapshot(self.task, store, snapshot, self.data, sandbox=kind, options=self.options())

    def options(self):
        return SandboxOptions.for_task(self.task, self.task.limits, f"test-{self.task.name}")


CONSTANT_GRADER = "def score(workspace, answers, measured):\n    return 1.0\n"


def tiny_task(root: Path, measure_script: str, *, grader: str = CONSTANT_GRADER,
              hidden: dict[str, str] | None = None, inputs: tuple[str, ...] = (), public: dict[str, str] | None = None,
              starter: dict[str, str] | None = None, repeats: int | None = None,
              timeout: float = 60.0,
              output_limit: int = 1 << 20, submission: str | None = None, name: str = "tiny") -> TinyTask:
    """A task in ``root``: assets (measure.py, grader.py, env/ = ``starter``), a prepared data
    variant (``public`` and ``hidden`` files) and a measure step reading ``inputs``."""
    assets, public_dir, hidden_dir = root / "assets", root / "data" / "public", root / "data" / "hidden"
    for folder, files in ((assets / "env", starter or {}), (public_dir, public or {}), (hidden_dir, hidden or {})):
        folder.mkdir(parents=True, exist_ok=True)
        for relative, content in files.items():
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(content)
    (assets / "measure.py").write_text(measure_script)
    (assets / "grader.py").write_text(grader)
    metric = Metric(name="score", direction="maximize", grader=FunctionRef("grader.py", "score"), submission=submission,
                    measure=Measure("measure.py", inputs, timeout, output_limit, repeats))
    task = TaskSpec(name=name, description="a tiny task", source=str(root / "tiny.yaml"), line=1, assets=assets,
                    metric=metric, data={}, limits=Limits())
    return TinyTask(task, PreparedData(public_dir, hidden_dir), root)


def timed_task(root: Path, *, repeats: int = 3) -> TinyTask:
    """The tiny timed task (see ``TIMED_*``); its honest relative times are about 1 for the
    starter and about 0 for ``TIMED_FAST``."""
    expected = sum(i * i % 7 for i in range(TIMED_N))
    return tiny_task(root, TIMED_MEASURE, grader=TIMED_GRADER, starter={"work.py": TIMED_STARTER},
                     hidden={"n.json": f'{{"n": {TIMED_N}}}', "expected.json": f'{{"value": {expected}}}'},
                     inputs=("n.json",), repeats=repeats, submission="work.py", name="tiny-timed")


def measured_folder(root: Path, *, submission, starter, overhead, complete: bool = True,
                    failed: tuple[str, int, int | None] | None = None, stopped: str | None = None,
                    slow: bool = False, walls: dict[str, list] | None = None) -> Path:
    """A measured/ folder as the measure step writes it; ``failed``: (subject, index, returncode)
    of the execution that stopped the measurement (None: it timed out); ``slow``: stopped at the
    slow bound; ``walls``: the wall-clock seconds of each subject's executions (by default the
    CPU seconds)."""
    measured = root / "measured"
    times = {"submission": submission, "starter": starter, "overhead": overhead}
    for name, values in times.items():
        for index, value in enumerate(values):
            folder = measured / name / str(index)
            (folder / "out").mkdir(parents=True)
            code, timed_out = 0, False
            if failed and failed[:2] == (name, index):
                code, timed_out = failed[2], failed[2] is None
            (folder / "exec.json").write_text(json.dumps({
                "subject": name, "phase": "overhead" if name == "overhead" else "run", "returncode": code,
                "timed_out": timed_out, "timeout": 60, "cpu_time": value, "output_tail": "Traceback: boom",
                "truncated": False, "truncated_reason": None, "skipped": []}))
    (measured / "timing.json").write_text(json.dumps({"unit": "cpu_seconds", "repeats": 3, **times, "order": [],
                                                      "complete": complete, "stopped": stopped,
                                                      "slow": slow, "wall_seconds": walls or times}))
    return measured


def task(direction: str = "maximize", **overrides) -> TaskSpec:
    spec = TaskSpec(name="t", description="d", source="specs/tasks/t.yaml", line=1, assets=Path("."),
                    metric=Metric("accuracy", direction, FunctionRef("grader.py", "score")), data={})
    return replace(spec, **overrides)

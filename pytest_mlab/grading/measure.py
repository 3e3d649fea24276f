"""The measure step: run a task's measure script on the agent's code, inside a sandbox of the run's
kind, and bring plain data back for the grader.

Graders never import, time or execute agent code in their own process (it could patch their
clock, read their memory, their environment or their answers). A task whose grader needs the
agent's code declares ``metric.measure``; before its grader runs, this module

- runs ``python .mlab-measure/SCRIPT .mlab-measure/inputs .mlab-measure/out`` in a FRESH sandbox
  per execution, populated like the run's workspace (the public data linked read-only, then the
  subject's regular files) plus ``.mlab-measure/`` (the script, the module it imports,
  :mod:`pytest_mlab.in_sandbox.mlab_measure`, copies of the declared hidden inputs, an empty
  ``out/``). The environment adds only ``MLAB_MEASURE_PHASE`` to the sandbox's allow-list: no
  hidden path, no key) and ``MLAB_MEASURE_SEED``: the seed of the grading's test inputs, drawn
  here for each grading (:func:`draw_seed`), unknown to the agent before, the same for every
  execution of the grading, so the submission's outputs can be checked against the unchanged
  starter's on the same inputs. Each sandbox is closed after its one execution, which ends every
  process it started;
- copies ``out/`` back (regular files only, opened without following links, at most
  ``measure.output_limit`` bytes and :data:`OUTPUT_FILES` files) to ``measured/<subject>/<n>/out/``
  and writes ``measured/<subject>/<n>/exec.json``: return code, time-out, CPU and wall-clock
  seconds, the tail of the output, and whether the copy was cut short;
- when the task is timed (``measure.timing.repeats``, a fixed number of rounds: :mod:`.timing`),
  runs the unchanged starter, the submission and an overhead execution (the script with ``MLAB_MEASURE_PHASE=overhead`` in a sandbox holding only
  ``.mlab-measure/``: no agent code runs there, it only does its imports) interleaved, in a
  rotating order, and writes ``measured/timing.json`` (with the grading's seed, ``inputs_seed``).
  CPU times come from the sandbox (``ExecResult.cpu_time``: the kernel's or the cgroup's count,
  read from outside the sandbox's processes), wall-clock times from the harness's clock around
  each execution (``ExecResult.duration``), never from anything the agent's code can reach. Nothing that runs agent code is
  subtracted: the agent could inflate it.

The grader decides what a failed measurement means; timing stops at the first failed execution
(the submission is invalid or the grading broken either way), the first the sandbox could not
count (a backend without CPU accounting here), or the first submission execution beyond
:data:`~.timing.SLOW_BOUND` times the starter (``slow`` in ``timing.json``), and ``timing.json``
says why. Nothing here takes a lock: other work on the machine, scripts of other runs included,
goes on during a timed measurement, and the score's paired ratios are built to hold under it.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.errors import GradingError
from pytest_mlab.grading.measured import OVERHEAD, STARTER, SUBMISSION, TIMING_FILE
from pytest_mlab.grading.timing import SLOW_BOUND, SLOW_GRACE_S, starter_ran_on_gpu
from pytest_mlab.in_sandbox import mlab_measure
from pytest_mlab.sandbox.base import ExecResult, Sandbox, SandboxOptions
from pytest_mlab.sandbox.registry import open_sandbox, resolve_kind
from pytest_mlab.sandbox.workspace import scratch_folder
from pytest_mlab.spec.models import Measure, TaskSpec
from pytest_mlab.trace import SnapshotStore

MEASURE_DIR = ".mlab-measure"
SUPPORT_SOURCE = Path(mlab_measure.__file__)  # what the measure script imports as mlab_measure
#: The order of one timed round, rotated each round so slow drift of the machine cancels out; the
#: starter first, so the submission's first execution has a bound (:data:`~.timing.SLOW_BOUND`).
ROTATION = (STARTER, SUBMISSION, OVERHEAD)
OUTPUT_FILES = 10_000  # most files one execution's out/ brings back
OUTPUT_DEPTH = 16  # deepest folder of out/ brought back
OUTPUT_TAIL = 4096  # characters of stdout + stderr kept in exec.json
EXEC_OUTPUT_LIMIT = 64 << 10  # bytes of stdout and stderr the sandbox keeps
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Subject:
    """Whose code an execution runs: host files and their workspace paths; ``data``: whether the
    task's public data is linked in (not for the overhead execution, which holds nothing)."""

    name: str
    files: tuple[tuple[Path, str], ...] = ()
    data: bool = True


@dataclass
class Copied:
    """What came back of one execution's out/."""

    files: int = 0
    bytes: int = 0
    truncated: str | None = None  # why the copy stopped early
    skipped: list[str] = field(default_factory=list)  # links, devices, FIFOs, sockets: left out


def measure(task: TaskSpec, store: SnapshotStore, snapshot_id: str, data: PreparedData, kind: str,
            options: SandboxOptions, dest: Path) -> Path:
    """Run the task's measure step on a snapshot; returns the ``measured`` folder made in ``dest``."""
    spec = task.metric.measure
    if spec is None:
        raise ValueError(f"task {task.name} declares no measure step")
    measured = Path(dest) / "measured"
    measured.mkdir(parents=True)
    with scratch_folder("measure") as scratch:
        runner = _Runner(task, spec, data, kind, options, measured, Path(scratch), draw_seed())
        submission = Subject(SUBMISSION, _snapshot_files(store, snapshot_id, Path(scratch) / "submission"))
        if spec.timing_repeats is None:
            runner.run(submission, 0)
        else:
            runner.timed(submission, Subject(STARTER, task.env_files()), spec.timing_repeats)
    return measured


def draw_seed() -> int:
    """A fresh seed for one grading's test inputs: from the operating system's randomness, so no
    run, seed or file the agent saw can predict it."""
    return secrets.randbits(63)


def _snapshot_files(store: SnapshotStore, snapshot_id: str, folder: Path) -> tuple[tuple[Path, str], ...]:
    """The snapshot's regular files, recreated as links into the store (the sandbox gets copies);
    symbolic links are left out, so nothing behind a link the agent made is ever read."""
    relpaths = sorted(store.manifest(snapshot_id)["files"])
    store.materialize_regular(snapshot_id, folder, link_paths=relpaths)
    return tuple((folder / rel, rel) for rel in relpaths if (folder / rel).is_file())


class _Runner:
    """Executes the measure script once per call, each time in a fresh sandbox."""

    def __init__(self, task: TaskSpec, spec: Measure, data: PreparedData, kind: str, options: SandboxOptions,
                 measured: Path, scratch: Path, seed: int) -> None:
        self.task, self.spec, self.data, self.kind, self.options = task, spec, data, kind, options
        self.seed = seed
        self.measured = measured
        self.script = PurePosixPath(spec.script).name
        self.data_files = data.public_files()
        self.empty = scratch / "empty"
        self.empty.mkdir()

    def timed(self, submission: Subject, starter: Subject, repeats: int) -> None:
        """Starter, submission and overhead, interleaved and rotated, ``repeats`` rounds; stops at
        the first failure, or after a submission execution beyond the slow bound (:mod:`.timing`)."""
        subjects = {SUBMISSION: submission, STARTER: starter, OVERHEAD: Subject(OVERHEAD, data=False)}
        times: dict[str, list[float | None]] = {name: [] for name in ROTATION}
        walls: dict[str, list[float]] = {name: [] for name in ROTATION}
        order: list[list[str]] = []
        stopped: str | None = None
        slow = False
        bound: tuple[float, float] | None = None  # the first starter execution's CPU and wall seconds
        on_gpu = False  # the unchanged starter says its work ran on a GPU: wall-clock seconds are compared
        for repeat in range(repeats):
            shift = repeat % len(ROTATION)
            this_round: list[str] = []
            order.append(this_round)
            for name in [*ROTATION[shift:], *ROTATION[:shift]]:
                this_round.append(name)
                limit = self.spec.timeout
                if name == SUBMISSION and bound is not None:
                    limit = min(limit, SLOW_BOUND * bound[1] + SLOW_GRACE_S)
                result = self.run(subjects[name], repeat, phase=OVERHEAD if name == OVERHEAD else "run",
                                  timeout=limit)
                times[name].append(result.cpu_time)
                walls[name].append(result.duration)
                if name == SUBMISSION and bound is not None and _beyond_bound(result, limit, bound, on_gpu, self.spec.timeout):
                    slow = True
                    break
                if result.timed_out or result.returncode != 0:
                    stopped = f"the {name} execution {repeat + 1} failed"
                elif result.cpu_time is None:
                    stopped = (f"the {resolve_kind(self.kind)} sandbox cannot count the CPU time of what it runs "
                               f"here (it needs a cgroup it can write; see docs/sandboxes.md), so timed tasks "
                               f"cannot be graded in it")
                if stopped:
                    break
                if name == STARTER and bound is None:  # the first round's starter runs before anything else
                    bound = (result.cpu_time, result.duration)
                    on_gpu = starter_ran_on_gpu(self.measured)
            if stopped or slow:
                break
        _write_json(self.measured / TIMING_FILE, {"unit": "cpu_seconds", "repeats": len(order), **times,
                                                     "order": order, "complete": stopped is None,
                                                     "stopped": stopped, "slow": slow, "slow_bound": SLOW_BOUND,
                                                     "on_gpu": on_gpu, "wall_seconds": walls,
                                                     "inputs_seed": self.seed})

    def run(self, subject: Subject, index: int, *, phase: str = "run", timeout: float | None = None) -> ExecResult:
        """One execution in a fresh sandbox, within ``timeout`` seconds (the task's measure timeout
        by default); its out/ and exec.json land in measured/SUBJECT/INDEX/."""
        timeout = self.spec.timeout if timeout is None else timeout
        folder = self.measured / subject.name / str(index)
        folder.mkdir(parents=True)
        with open_sandbox(self.kind, options=self.options) as sandbox:
            self._populate(sandbox, subject)
            result = sandbox.exec([sandbox.python, f"{MEASURE_DIR}/{self.script}", f"{MEASURE_DIR}/inputs",
                                   f"{MEASURE_DIR}/out"], timeout=timeout, output_limit=EXEC_OUTPUT_LIMIT,
                                  env={mlab_measure.PHASE_VARIABLE: phase,
                                       mlab_measure.SEED_VARIABLE: str(self.seed)})
            sandbox.sync_out()
            copied = copy_regular_tree(sandbox.workspace, f"{MEASURE_DIR}/out", folder / "out",
                                       max_bytes=self.spec.output_limit, max_files=OUTPUT_FILES)
        _write_json(folder / "exec.json", {
            "subject": subject.name, "phase": phase, "returncode": result.returncode, "timed_out": result.timed_out,
            "timeout": timeout, "cpu_time": result.cpu_time, "wall_time": result.duration,
            "output_tail": (result.stdout + result.stderr)[-OUTPUT_TAIL:],
            "truncated": copied.truncated is not None, "truncated_reason": copied.truncated,
            "skipped": copied.skipped[:100]})
        return result

    def _populate(self, sandbox: Sandbox, subject: Subject) -> None:
        """Like the run's workspace (data linked read-only, then the subject's files), plus the
        measurement's own folder, which nothing of the subject may pre-fill."""
        if subject.data:
            for relative in self.data_files:
                sandbox.copy_in(self.data.public / relative, relative, link=True)
        data_files = set(self.data_files)
        for host_path, relative in subject.files:
            if relative in data_files or relative == MEASURE_DIR or relative.startswith(f"{MEASURE_DIR}/"):
                continue
            sandbox.copy_in(host_path, relative)
        sandbox.copy_in(self.task.assets / self.spec.script, f"{MEASURE_DIR}/{self.script}")
        sandbox.copy_in(SUPPORT_SOURCE, f"{MEASURE_DIR}/{SUPPORT_SOURCE.name}")
        sandbox.copy_in(self.empty, f"{MEASURE_DIR}/inputs")
        sandbox.copy_in(self.empty, f"{MEASURE_DIR}/out")
        for name in self.spec.inputs:
            if not (self.data.hidden / name).is_file():
                raise GradingError(f"task {self.task.name}: metric.measure.inputs names {name!r}, which its data "
                                   f"recipe did not write to the hidden folder")
            sandbox.copy_in(self.data.hidden / name, f"{MEASURE_DIR}/inputs/{name}")


def _beyond_bound(result: ExecResult, limit: float, bound: tuple[float, float], on_gpu: bool,
                  task_timeout: float) -> bool:
    """Whether a submission execution was slower than SLOW_BOUND times the starter's first: stopped
    at the bound's wall-clock limit (not the task's own), or, on a CPU, more CPU seconds."""
    if result.timed_out:
        return limit < task_timeout
    return not on_gpu and result.returncode == 0 and result.cpu_time is not None \
        and result.cpu_time > SLOW_BOUND * bound[0]


def copy_regular_tree(root: Path, relative: str, dest: Path, *, max_bytes: int, max_files: int) -> Copied:
    """Copy the folder ``root/relative`` to ``dest``: regular files and folders only, every path
    component below ``root`` opened without following links (code in the sandbox may have made
    any of them a link), at most ``max_bytes`` bytes and ``max_files`` files."""
    dest.mkdir(parents=True, exist_ok=True)
    copied = Copied()
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)  # the harness's own folder
    for part in PurePosixPath(relative).parts:
        try:
            child = _open_dir(part, fd)
        except OSError as exc:
            copied.truncated = f"{relative} is not a folder ({exc.strerror or exc})"
            return copied
        finally:
            os.close(fd)
        fd = child
    try:
        _copy_dir(fd, "", dest, copied, max_bytes, max_files, OUTPUT_DEPTH)
    finally:
        os.close(fd)
    return copied


def _open_dir(name: str, dir_fd: int) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)


def _copy_dir(dir_fd: int, prefix: str, dest: Path, copied: Copied, max_bytes: int, max_files: int,
              depth: int) -> None:
    with os.scandir(dir_fd) as scan:
        names = sorted(entry.name for entry in scan)
    for name in names:
        if copied.truncated:
            return
        shown = f"{prefix}{name}"
        try:
            info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode):
            if depth <= 0:
                copied.truncated = f"{shown}/ is nested more than {OUTPUT_DEPTH} folders deep"
                return
            try:
                child = _open_dir(name, dir_fd)
            except OSError:
                copied.skipped.append(f"{shown}/")
                continue
            try:
                (dest / name).mkdir()
                _copy_dir(child, f"{shown}/", dest / name, copied, max_bytes, max_files, depth - 1)
            finally:
                os.close(child)
        elif stat.S_ISREG(info.st_mode):
            if copied.files >= max_files:
                copied.truncated = f"more than {max_files} files"
                return
            _copy_file(dir_fd, name, shown, dest / name, copied, max_bytes)
        else:
            copied.skipped.append(shown)


def _copy_file(dir_fd: int, name: str, shown: str, target: Path, copied: Copied, max_bytes: int) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        copied.skipped.append(shown)
        return
    with os.fdopen(fd, "rb") as source:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode):  # swapped between stat and open
            copied.skipped.append(shown)
            return
        if copied.bytes + info.st_size > max_bytes:
            copied.truncated = f"more than {max_bytes} bytes (at {shown}, {info.st_size} bytes)"
            return
        with open(target, "wb") as sink:
            while chunk := source.read(min(_CHUNK, max_bytes - copied.bytes + 1)):
                copied.bytes += len(chunk)
                if copied.bytes > max_bytes:  # the file grew after fstat
                    copied.truncated = f"more than {max_bytes} bytes (at {shown})"
                    break
                sink.write(chunk)
    if copied.truncated:
        target.unlink(missing_ok=True)
        return
    copied.files += 1


def _write_json(path: Path, payload: dict) -> None:
    path.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")

"""What a step costs: pytest-mlab's against the original MLAgentBench's, and the snapshot's share.

Run: python bench/step_overhead.py [--rounds 5] [--data-mb 200] [--checkpoint-mb 50]

Side by side, interleaved, each run in a fresh process as xdist workers and separate sessions
start them, each step after a pause that stands for the agent's LLM call (``--think``, 1 s: an
agent never acts on the step before's output sooner; background work such as the snapshot's sync
runs in it, and the original's unsynced writes are flushed by the kernel whenever it chooses): an Execute Script step (the run's first) that writes a checkpoint next to read-only
data, then Copy File steps, in pytest-mlab (Environment.step: the sandboxed run, the trace
record, the snapshot and its one sync, which runs in the background, with the data's digests
remembered beside the data cache as the runner does) and in a re-creation of what the original
does per step (MLAgentBench at 5d71205: low_level_actions.py's execute_script runs
``CUDA_VISIBLE_DEVICES=0 python -u script`` through a shell and reads its output line by line
with a selector; environment.py then rewrites trace.json and copies every workspace file that is
not read-only into env_log/traces/step_N_files; nothing is synced). The first pytest-mlab run hashes the data; later
ones, in new processes, do not: each finished run's folder is removed as the runner removes an
earlier run's, under a lease on the data (an unlink moves the data's ctime, and a remembered
digest is trusted only while the ctime it was recorded with holds).

Then, in this process:
each round is one run, as a worker carries out run after run: a fresh workspace with the data
hard-linked from the data cache (as the runner links it), a fresh store, a first step, then an
Execute Script that writes a new checkpoint, then a step that changes nothing. Costs are given as
a multiple of one plain copy of the checkpoint file (what the original's snapshot does with it),
measured in the same round, interleaved, so the numbers compare across machines: the snapshot
after the checkpoint should cost little more than that copy (the kernel copies it into the store,
then BLAKE3 hashes the copy from memory on every core); its one sync, which waits for
the disk to take the file system's unwritten data (the checkpoint and its copy), runs in the
background, and a step waits for it only if it is still running when the next snapshot starts; the
step after costs near zero, and the read-only data is hashed in the first run only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import selectors
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mlab.actions.registry import implementations  # noqa: E402
from pytest_mlab.data.cache import DATA_DIGESTS  # noqa: E402
from pytest_mlab.env import Environment, ReadOnlyRules  # noqa: E402
from pytest_mlab.sandbox import LocalSandbox  # noqa: E402
from pytest_mlab.spec.models import Limits  # noqa: E402
from pytest_mlab.spec.project import Project  # noqa: E402
from pytest_mlab.trace import SnapshotStore, TraceWriter  # noqa: E402
from pytest_mlab.trace.snapshots import blobs, data_digests  # noqa: E402
from pytest_mlab.trace.snapshots import durability  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MB = 1 << 20
TRAIN = "import os\nwith open('checkpoint.pt', 'wb') as fh:\n    fh.write(os.urandom({size}))\n"


SYNCED: list[float] = []  # seconds each whole-snapshot sync took (in the background)
WAITED: list[float] = []  # seconds a step waited for a sync (its critical path)


def timed_sync(path: Path, real=durability.sync_filesystem) -> None:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    real(path)
    SYNCED.append(time.perf_counter() - started)


def timed_wait(self: durability.BackgroundSync,
               real=durability.BackgroundSync.wait) -> None:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    real(self)
    WAITED.append(time.perf_counter() - started)


durability.sync_filesystem = timed_sync
HASHED: list[int] = [0]  # bytes the store has hashed
STORE_HASH = blobs._new_hasher


class CountingHash:
    """The store's hash, counting what it is fed."""

    def __init__(self) -> None:
        self._hash = STORE_HASH()

    def update(self, data: bytes) -> None:
        HASHED[0] += len(data)
        self._hash.update(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


blobs._new_hasher = CountingHash
durability.BackgroundSync.wait = timed_wait  # type: ignore[method-assign]


class TimedStore(SnapshotStore):
    """A store that remembers how long each snapshot took, and how much of that it waited for a sync."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.seconds: list[float] = []
        self.synced: list[float] = []

    def snapshot(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        started, before = time.perf_counter(), len(WAITED)
        try:
            return super().snapshot(*args, **kwargs)
        finally:
            self.seconds.append(time.perf_counter() - started)
            self.synced.append(sum(WAITED[before:]))


def plain_copy(path: Path) -> float:
    """Seconds to copy a file as the original's snapshot does (shutil.copyfile), the copy removed."""
    started = time.perf_counter()
    shutil.copyfile(path, path.with_name("copy.bench"))
    took = time.perf_counter() - started
    path.with_name("copy.bench").unlink()
    return took


def one_run(root: Path, data: Path, project: Project, checkpoint_mb: int, copy_first: bool,
            think: float) -> dict[str, float]:
    """One run's timings: its first snapshot, the one after the checkpoint, the one after that,
    and a plain copy of the checkpoint (before or after the snapshots, alternating by round)."""
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    os.link(data, workspace / data.name)
    (workspace / "train.py").write_text(TRAIN.format(size=checkpoint_mb * MB))
    store = TimedStore(root / "snapshots")
    actions = tuple(project.action(name) for name in ("List Files", "Execute Script"))
    env = Environment(sandbox=LocalSandbox(workspace), actions=actions, implementations=implementations(actions),
                      limits=Limits(max_steps=10),
                      read_only=ReadOnlyRules(frozenset({data.name})), trace=TraceWriter(root / "trace.jsonl"),
                      snapshots=store, research_problem="bench")
    try:
        env.step("List Files", {"dir_path": "."})
        observation = env.step("Execute Script", {"script_name": "train.py"})
        if "Traceback" in observation:
            raise SystemExit(f"the training script failed:\n{observation}")
        checkpoint = workspace / "checkpoint.pt"
        copied = plain_copy(checkpoint) if copy_first else 0.0
        time.sleep(think)  # the agent's LLM call, in which the snapshot's sync runs
        env.step("List Files", {"dir_path": "."})
        if not copy_first:
            copied = plain_copy(checkpoint)
    finally:
        env.sandbox.close()
        env.trace.close()
    first, after_checkpoint, unchanged = store.seconds
    return {"first": first, "checkpoint": after_checkpoint, "unchanged": unchanged, "copy": copied,
            "checkpoint sync": store.synced[1]}


ORIGINAL_TRACE_STEPS = 20  # the original rewrites its whole trace.json after each step


def original_step(workspace: Path, log_dir: Path, step: int, read_only: set[str], command: str | None,
                  copy: tuple[str, str] | None) -> None:
    """One step as the original takes it: the action, then save(): trace.json and the files."""
    if command is not None:
        original_execute(command, workspace)
    if copy is not None:
        shutil.copyfile(workspace / copy[0], workspace / copy[1])
    trace = {"steps": [{"action": {"name": "Execute Script", "args": {"script_name": "train.py"}},
                        "observation": "x" * 2000, "timestamp": time.time()}] * ORIGINAL_TRACE_STEPS}
    with open(log_dir / "trace.json", "w") as fh:
        json.dump(trace, fh, indent=4)
    save_folder = log_dir / "traces" / f"step_{step}_files"
    if save_folder.exists():
        shutil.rmtree(save_folder)
    save_folder.mkdir(parents=True)
    for path, _subdirs, files in os.walk(workspace):
        relpath = os.path.relpath(path, workspace)
        for name in files:
            file_path = os.path.normpath(os.path.join(relpath, name))
            if file_path not in read_only:
                (save_folder / relpath).mkdir(parents=True, exist_ok=True)
                shutil.copyfile(workspace / file_path, save_folder / file_path)


def original_execute(script: str, workspace: Path) -> str:
    """Execute Script as the original runs it (low_level_actions.py at 5d71205): a shell command,
    unbuffered Python, output read line by line through a selector until the process ends."""
    process = subprocess.Popen(f"CUDA_VISIBLE_DEVICES=0 {sys.executable} -u {script}", stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, shell=True, cwd=workspace)
    assert process.stdout is not None and process.stderr is not None
    stdout_lines: list[str] = []
    stderr_lines: list[str] = []
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    selector.register(process.stderr, selectors.EVENT_READ)
    while process.poll() is None and selector.get_map():
        for key, _ in selector.select(timeout=1):
            line = key.fileobj.readline()  # type: ignore[union-attr]
            (stdout_lines if key.fileobj is process.stdout else stderr_lines).append(line)
    stdout_lines.extend(process.stdout)
    stderr_lines.extend(process.stderr)
    if process.returncode != 0:
        raise SystemExit(f"the original's script failed:\n{''.join(stderr_lines)}")
    return "".join(stdout_lines)


def child(kind: str, scratch: Path, data: Path, checkpoint_mb: int, copies: int, think: float) -> dict[str, list[float]]:
    """One run in this fresh process: its Execute Script step, the same again (a new checkpoint,
    modules loaded, data known), then ``copies`` Copy File steps;
    wall and CPU seconds of each step (CPU: this process and its finished children)."""
    workspace = scratch / "ws"
    workspace.mkdir(parents=True)
    (workspace / "train.py").write_text(TRAIN.format(size=checkpoint_mb * MB))
    timings: dict[str, list[float]] = {key: [] for step in ("execute", "again", "copy")
                                       for key in (step, f"{step} cpu", f"{step} sync", f"{step} hashed")}

    def timed(label: str, step) -> None:  # type: ignore[no-untyped-def]
        time.sleep(think)  # the agent's LLM call before the step, the same on both sides
        wall, cpu, waited, hashed = time.perf_counter(), _cpu(), len(WAITED), HASHED[0]
        step()
        timings[label + " hashed"].append(HASHED[0] - hashed)
        timings[label].append(time.perf_counter() - wall)
        timings[label + " cpu"].append(_cpu() - cpu)
        timings[label + " sync"].append(sum(WAITED[waited:]))

    if kind == "original":
        os.link(data, workspace / data.name)
        log_dir = scratch / "env_log"
        log_dir.mkdir()
        read_only = {data.name}
        timed("execute", lambda: original_step(workspace, log_dir, 0, read_only, "train.py", None))
        timed("again", lambda: original_step(workspace, log_dir, 1, read_only, "train.py", None))
        for index in range(copies):
            timed("copy", lambda: original_step(workspace, log_dir, index + 2, read_only, None,
                                                ("train.py", f"copy{index}.py")))
        return timings
    project = Project(REPO, REPO / "specs/actions", REPO / "agents", REPO / "specs/tasks")
    actions = tuple(project.action(name) for name in ("Copy File", "Execute Script"))
    with SnapshotStore(scratch / "snapshots", data_digests=data.parent / DATA_DIGESTS) as store, \
            LocalSandbox(workspace) as sandbox:
        data_digests.vouch([data], store.data_digests)
        sandbox.copy_in(data, data.name, link=True)
        env = Environment(sandbox=sandbox, actions=actions, implementations=implementations(actions),
                          limits=Limits(max_steps=copies + 3), read_only=ReadOnlyRules(frozenset({data.name})),
                          trace=TraceWriter(scratch / "trace.jsonl"), snapshots=store, research_problem="bench")
        timed("execute", lambda: env.step("Execute Script", {"script_name": "train.py"}))
        timed("again", lambda: env.step("Execute Script", {"script_name": "train.py"}))  # a new checkpoint
        for index in range(copies):
            timed("copy", lambda: env.step("Copy File", {"source": "train.py", "destination": f"copy{index}.py"}))
        env.trace.close()
    timings["background sync"] = list(SYNCED)
    return timings


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def remove_run(folder: Path, data: Path) -> None:
    """Remove a finished run's folder as the runner removes an earlier run's: under a lease on the
    data, so that the digest remembered for it survives the unlinks (which move its ctime); the
    lease is taken again and held through the next run, whose links (the original's too) it
    outlasts, as a worker's lease outlasts its runs' links."""
    digests = data.parent / DATA_DIGESTS
    data_digests.vouch([data], digests)
    shutil.rmtree(folder, ignore_errors=True)
    data_digests.settle(digests)
    data_digests.vouch([data], digests)


def side_by_side(scratch: Path, data: Path, rounds: int, checkpoint_mb: int, copies: int, think: float) -> None:
    """Each round runs pytest-mlab and the original in fresh processes, the order alternating."""
    results: dict[str, list[dict[str, list[float]]]] = {"pytest-mlab": [], "original": []}
    for index in range(rounds):
        order = ("pytest-mlab", "original") if index % 2 == 0 else ("original", "pytest-mlab")
        for kind in order:
            folder = scratch / f"{kind}{index}"
            done = subprocess.run([sys.executable, __file__, "--child", kind, "--scratch", str(folder),
                                   "--data", str(data), "--checkpoint-mb", str(checkpoint_mb), "--copies", str(copies),
                                   "--think", str(think)],
                                  capture_output=True, text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the {kind} run failed:\n{done.stderr}")
            results[kind].append(json.loads(done.stdout.splitlines()[-1]))
            remove_run(folder, data)
            os.sync()  # each run starts with nothing unwritten: the original leaves its copies to the kernel

    def median(kind: str, key: str, runs: slice, scale: float) -> str:
        values = [t for run in results[kind][runs] for t in run.get(key, ())]
        return f"{statistics.median(values) * scale:11.1f}" if values else f"{'-':>11s}"

    print(f"side by side, {rounds} runs each in a fresh process, interleaved (medians; CPU counts the script too)")
    print(f"{'':38s}{'pytest-mlab':>14s}{'original':>14s}")
    later = slice(1, None)
    for label, key, runs, unit in (("Execute Script, first run (wall)", "execute", slice(0, 1), "ms"),
                                   ("Execute Script, later runs (wall)", "execute", later, "ms"),
                                   ("Execute Script, later runs (CPU)", "execute cpu", later, "ms"),
                                   ("  of which waiting for a sync (wall)", "execute sync", later, "ms"),
                                   ("  bytes its snapshot hashed", "execute hashed", later, "MB"),
                                   ("Execute Script again, same run (wall)", "again", slice(None), "ms"),
                                   ("Execute Script again, same run (CPU)", "again cpu", slice(None), "ms"),
                                   ("Copy File (wall)", "copy", slice(None), "ms"),
                                   ("Copy File (CPU)", "copy cpu", slice(None), "ms"),
                                   ("  of which waiting for a sync (wall)", "copy sync", slice(None), "ms"),
                                   ("a sync, off the steps' path (wall)", "background sync", slice(None), "ms")):
        if runs == later and rounds < 2:
            continue
        scale = 1000 if unit == "ms" else 1 / MB
        ours, theirs = median("pytest-mlab", key, runs, scale), median("original", key, runs, scale)
        print(f"{label:38s}{ours} {unit}{theirs} {unit}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data-mb", type=int, default=200)
    parser.add_argument("--checkpoint-mb", type=int, default=50)
    parser.add_argument("--copies", type=int, default=5, help="Copy File steps per side-by-side run")
    parser.add_argument("--think", type=float, default=1.0,
                        help="seconds before each side-by-side step, standing for the agent's LLM call (default 1)")
    parser.add_argument("--child", choices=("pytest-mlab", "original"), help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.scratch, args.data, args.checkpoint_mb, args.copies, args.think)))
        return
    project = Project(REPO, REPO / "specs/actions", REPO / "agents", REPO / "specs/tasks")
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "cache" / "train.csv"
        data.parent.mkdir()
        with open(data, "wb") as fh:
            for _ in range(args.data_mb):
                fh.write(os.urandom(MB))
        old = time.time() - 3600
        os.utime(data, (old, old))
        data.chmod(0o444)
        side_by_side(Path(scratch), data, args.rounds, args.checkpoint_mb, args.copies, args.think)
        data_digests.settle(None)
        rounds = [one_run(Path(scratch) / f"run{index}", data, project, args.checkpoint_mb, index % 2 == 0,
                          args.think)
                  for index in range(args.rounds)]
    copies = [r["copy"] for r in rounds]

    def ratio(key: str, runs: list[dict[str, float]] = rounds) -> str:
        ratios = [r[key] / r["copy"] for r in runs]
        return f"{statistics.median(r[key] for r in runs) * 1000:8.1f} ms  {statistics.median(ratios):6.2f} x one copy"

    print(f"{args.data_mb} MB of read-only data, a {args.checkpoint_mb} MB checkpoint, {args.rounds} runs (medians)")
    print(f"one plain copy of the checkpoint:        {statistics.median(copies) * 1000:8.1f} ms")
    print(f"snapshot after the checkpoint appears:   {ratio('checkpoint')}")
    print(f"  of which waiting for a sync:           {ratio('checkpoint sync')}")
    print(f"next snapshot, nothing changed:          {ratio('unchanged')}")
    print(f"first snapshot of the first run:         {ratio('first', rounds[:1])}  (hashes the data)")
    if len(rounds) > 1:
        print(f"first snapshot of later runs:            {ratio('first', rounds[1:])}  (data digests cached)")


if __name__ == "__main__":
    main()

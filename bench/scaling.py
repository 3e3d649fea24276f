"""How many xdist workers one controller drives: memory per worker, and the harness's time per step.

Run: python bench/scaling.py [--workers 1,4,16] [--step-workers 16] [--steps 40] [--work-ms 100]
                             [--sandbox local] [--json FILE]

Both parts start real pytest sessions, as a user would, and watch their processes in /proc.

1. Memory. A generated project of tests that each wait until they are released runs with
   ``-n K`` for each K of --workers (the plugin loads from its entry point, as always). While
   every worker waits, the RSS and PSS (/proc/PID/smaps_rollup, where readable) of each worker
   and of the controller are sampled. Apart: what loading litellm adds to a process, which every
   process of a session with a real model does (the scripted runs below never load it).
2. Steps. Runs of the diabetes task by the ``simple`` agent on a scripted LLM (answers at once,
   no API): step 1 writes a script (Edit Script (AI)), every later step but the last runs it, and
   it sleeps --work-ms and prints how long it slept, standing in for work that uses no CPU of
   this machine (an LLM call, code running on a remote host). One run with ``-n 1``, then one run
   per worker with ``-n N``, in the same invocation. From each trace.jsonl: a step's cycle is the
   time between the ends of two consecutive step records; minus the script's own time, it is the
   harness's overhead, split into the agent loop (prompt, LLM call, parsing, records) and the
   step itself (starting the script in the sandbox, snapshot). CPU per step is the workers' CPU
   time (/proc/PID/stat; scripts included where they are the workers' children: local, bwrap)
   over the window in which every run was stepping, divided by the steps that ended in it.
   ``--sandbox docker`` needs a reachable docker daemon (docs/sandboxes.md).

So that numbers compare across machines, overheads are also given as a multiple of one bare
``python -c pass`` measured in the same invocation, and the N-worker overhead as a multiple of
the 1-worker one. Absolute milliseconds hold for this machine only.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mlab.sandbox import SANDBOX_KINDS  # noqa: E402
from pytest_mlab.sandbox.process_tree import _scan_procs  # noqa: E402
from pytest_mlab.trace import read_trace  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TASK = "diabetes"  # small data, a grader that takes well under a second: little besides the steps
TICK = os.sysconf("SC_CLK_TCK")
SAMPLE_EVERY = 0.5  # seconds between two looks at the session's processes
READY_TIMEOUT = 300  # seconds the memory part waits for every worker to be waiting

WAITING_TESTS = '''\
import os
import time
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.mark.parametrize("index", range({count}))
def test_wait(index):
    (HERE / "ready" / os.environ.get("PYTEST_XDIST_WORKER", "main")).touch()
    deadline = time.monotonic() + {timeout}
    while not (HERE / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
'''

WORK_SCRIPT = '''\
import time

started = time.perf_counter()
time.sleep({seconds})
print(f"work {{time.perf_counter() - started:.6f}}")
'''
WORK_LINE = re.compile(r"^work (\d+\.\d+)$", re.MULTILINE)


# ---------------------------------------------------------------- watching a session's processes

@dataclass(frozen=True)
class Usage:
    rss_mb: float
    pss_mb: float | None  # None where smaps_rollup cannot be read
    own_cpu_s: float  # user + system
    children_cpu_s: float  # user + system of the children it waited for (a worker's scripts)

    @property
    def cpu_s(self) -> float:
        return self.own_cpu_s + self.children_cpu_s

    @property
    def size_mb(self) -> float:
        """PSS, which shares pages fairly among processes; RSS where PSS cannot be read."""
        return self.rss_mb if self.pss_mb is None else self.pss_mb


@dataclass
class Sample:
    at: float  # time.time(), as the trace's records
    controller: Usage | None
    workers: dict[int, Usage]


def usage(pid: int) -> Usage | None:
    """One process's memory and CPU time, or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()
    own, children = (sum(int(fields[index]) for index in pair) / TICK for pair in ((11, 12), (13, 14)))
    rss_kb = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    pss_kb = None
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        pss_kb = next((int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), None)
    except OSError:
        pass
    return Usage(rss_kb / 1024, None if pss_kb is None else pss_kb / 1024, own, children)


class Watcher:
    """Samples a pytest controller and its direct children (the xdist workers) until it ends."""

    def __init__(self, controller: int) -> None:
        self.controller = controller
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            children = [pid for pid, proc in _scan_procs().items() if proc.ppid == self.controller]
            workers = {pid: found for pid in children if (found := usage(pid)) is not None}
            self.samples.append(Sample(time.time(), usage(self.controller), workers))
            self._stop.wait(SAMPLE_EVERY)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def between(self, start: float, end: float) -> list[Sample]:
        return [sample for sample in self.samples if start <= sample.at <= end]


def mean_max(values: list[float]) -> dict[str, float]:
    return {"mean": round(statistics.fmean(values), 1), "max": round(max(values), 1)} if values else {}


def memory_of(samples: list[Sample]) -> dict[str, Any]:
    """Per-worker and controller memory: each process's median over the samples, then mean and max."""
    by_worker: dict[int, list[Usage]] = {}
    for sample in samples:
        for pid, used in sample.workers.items():
            by_worker.setdefault(pid, []).append(used)
    rss = [statistics.median(u.rss_mb for u in used) for used in by_worker.values()]
    pss = [statistics.median(u.pss_mb for u in used) for used in by_worker.values()
           if all(u.pss_mb is not None for u in used)]
    controller = [sample.controller for sample in samples if sample.controller is not None]
    return {"workers_seen": len(by_worker), "worker_rss_mb": mean_max(rss), "worker_pss_mb": mean_max(pss),
            "controller_rss_mb": round(statistics.median(u.rss_mb for u in controller), 1) if controller else None,
            "controller_pss_mb": round(statistics.median(u.pss_mb for u in controller), 1)
            if controller and all(u.pss_mb is not None for u in controller) else None}


# ---------------------------------------------------------------- running pytest

def start_pytest(args: list[str], cwd: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                                cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)


def finish(process: subprocess.Popen[bytes], log: Path, what: str, timeout: float = 600) -> None:
    """Wait for the session; pytest's 0 (all passed) and 1 (some failed) are both a finished session."""
    try:
        code = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise SystemExit(f"{what}: the pytest session took over {timeout:.0f} s and was stopped; its output:\n"
                         f"{log.read_text(errors='replace')[-3000:]}") from None
    if code not in (0, 1):
        raise SystemExit(f"{what}: pytest exited with {code}; its output:\n{log.read_text(errors='replace')[-3000:]}")


def idle_workers(scratch: Path, workers: int) -> dict[str, Any]:
    """Memory of ``workers`` xdist workers that are all waiting in a test, and of their controller."""
    project = scratch / f"idle{workers}"
    (project / "ready").mkdir(parents=True)
    (project / "test_wait.py").write_text(WAITING_TESTS.format(count=2 * workers, timeout=READY_TIMEOUT))
    log = project / "pytest.log"
    started = time.time()
    process = start_pytest(["-q", "-n", str(workers), "--mlab-out", str(project / "results"), "test_wait.py"],
                           project, log)
    watcher = Watcher(process.pid)
    try:
        while len(list((project / "ready").iterdir())) < workers:
            if process.poll() is not None or time.time() - started > READY_TIMEOUT:
                raise SystemExit(f"memory, -n {workers}: the workers never all waited; pytest's output:\n"
                                 f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.2)
        ready = time.time()
        time.sleep(6 * SAMPLE_EVERY)
        (project / "release").touch()
        released = time.time()
        finish(process, log, f"memory, -n {workers}")
    finally:
        watcher.stop()
    return {"workers": workers, "all_waiting_after_s": round(ready - started, 1),
            **memory_of(watcher.between(ready, released))}


def script_for(steps: int, work_ms: int, work_script: str = WORK_SCRIPT) -> list[Any]:
    """The scripted LLM's answers: write the work script, run it steps - 2 times, final answer."""
    def action(name: str, arguments: dict[str, str]) -> str:
        return f"Action: {name}\nAction Input: {json.dumps(arguments)}\n"

    code = work_script.format(seconds=work_ms / 1000)
    return [action("Edit Script (AI)", {"script_name": "work.py", "edit_instruction": "Write the work script.",
                                        "save_name": "work.py"}),
            {"role": "edit", "text": f"```python\n{code}```\n"},
            *[action("Execute Script", {"script_name": "work.py"})] * (steps - 2),
            action("Final Answer", {"final_answer": "done"})]


@dataclass
class Steps:
    cycle: list[float] = field(default_factory=list)  # seconds between the ends of two step records
    own: list[float] = field(default_factory=list)  # the script's own time, as it printed it
    in_step: list[float] = field(default_factory=list)  # the step record's duration
    ends: list[float] = field(default_factory=list)  # when each measured step ended


def measured_steps(trace: Path) -> Steps:
    """The Execute Script steps of a run, from the second on (the first also compiles the script)."""
    steps = [record for record in read_trace(trace) if record.get("type") == "step"]
    found = Steps()
    for before, step in zip(steps[1:], steps[2:]):
        match = WORK_LINE.search(str(step.get("observation", "")))
        if step["action"] != "Execute Script" or match is None:
            continue
        found.cycle.append(step["t"] - before["t"])
        found.own.append(float(match.group(1)))
        found.in_step.append(step["duration"])
        found.ends.append(step["t"])
    return found


def ms(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 1)


def stepping_workers(scratch: Path, workers: int, args: argparse.Namespace) -> dict[str, Any]:
    """One run per worker, all at once: the harness's time and CPU per step."""
    folder = scratch / f"steps{workers}{getattr(args, 'label', '')}"
    folder.mkdir()
    script = folder / "llm.yaml"
    script.write_text(json.dumps(script_for(args.steps, args.work_ms, getattr(args, "work_script", WORK_SCRIPT)),
                                 indent=1))
    out, log = folder / "results", folder / "pytest.log"
    process = start_pytest(["-q", "-n", str(workers), f"specs/tasks/{TASK}.yaml", "--agent=simple",
                            f"--llm=scripted:{script}", f"--seeds={workers}", f"--max-steps={args.steps}",
                            f"--sandbox={args.sandbox}", "--mlab-out", str(out), *getattr(args, "pytest_args", ())],
                           REPO, log)
    watcher = Watcher(process.pid)
    try:
        finish(process, log, f"steps, -n {workers}")
    finally:
        watcher.stop()
    runs = [measured_steps(trace) for trace in sorted(out.glob("runs/*/trace.jsonl"))]
    if len(runs) != workers or any(not run.cycle for run in runs):
        raise SystemExit(f"steps, -n {workers}: expected {workers} runs with Execute Script steps, found "
                         f"{sum(bool(run.cycle) for run in runs)}; pytest's output:\n"
                         f"{log.read_text(errors='replace')[-3000:]}")
    every = Steps(*([value for run in runs for value in getattr(run, name)] for name in Steps.__dataclass_fields__))
    overhead = [cycle - own for cycle, own in zip(every.cycle, every.own)]
    # every run stepping: from every run's first measured step to the first run's last, so that
    # neither starting the workers nor grading counts
    window = watcher.between(max(run.ends[0] for run in runs), min(run.ends[-1] for run in runs))
    if getattr(args, "any_stepping", False):  # runs that do not all step at once (bench/ray_steps.py)
        window = watcher.between(min(run.ends[0] for run in runs), max(run.ends[-1] for run in runs))
    stepping = memory_of(window)
    return {"workers": workers, "runs": len(runs), "steps": len(every.cycle),
            "cycle_ms": ms(every.cycle), "own_ms": ms(every.own), "overhead_ms": ms(overhead),
            "agent_loop_ms": ms([cycle - step for cycle, step in zip(every.cycle, every.in_step)]),
            "in_step_ms": ms([step - own for step, own in zip(every.in_step, every.own)]),
            "steps_per_s": round(len(every.cycle) / sum(every.cycle) * len(runs), 1),
            **cpu_per_step(window, every.ends),
            "stepping_worker_pss_mb": stepping["worker_pss_mb"], "stepping_controller_pss_mb":
            stepping["controller_pss_mb"], **peaks(watcher.samples)}


def cpu_per_step(window: list[Sample], ends: list[float]) -> dict[str, float | None]:
    """Workers' (scripts included) and the controller's CPU milliseconds per step ended in ``window``."""
    ended = sum(window[0].at < end <= window[-1].at for end in ends) if len(window) >= 2 else 0
    if not ended:
        return {"cpu_per_step_ms": None, "controller_cpu_per_step_ms": None}
    first, last = window[0], window[-1]
    workers = sum(last.workers[pid].cpu_s - first.workers[pid].cpu_s for pid in last.workers if pid in first.workers)
    controller = None
    if first.controller is not None and last.controller is not None:
        controller = last.controller.own_cpu_s - first.controller.own_cpu_s
    return {"cpu_per_step_ms": round(workers / ended * 1000, 1),
            "controller_cpu_per_step_ms": None if controller is None else round(controller / ended * 1000, 2)}


def peaks(samples: list[Sample]) -> dict[str, Any]:
    """Each worker's highest PSS (RSS where PSS cannot be read), mean and max; the controller's
    highest, and its CPU time over the whole session (collection, reports, results files)."""
    workers: dict[int, float] = {}
    for sample in samples:
        for pid, used in sample.workers.items():
            workers[pid] = max(workers.get(pid, 0.0), used.size_mb)
    controllers = [sample.controller for sample in samples if sample.controller is not None]
    return {"worker_peak_mb": mean_max(list(workers.values())),
            "controller_peak_mb": round(max(used.size_mb for used in controllers), 1) if controllers else None,
            "controller_cpu_s": round(controllers[-1].own_cpu_s, 1) if controllers else None}


def bare_python(repeats: int = 10) -> dict[str, float]:
    """Wall and CPU milliseconds of one bare ``python -c pass``: the unit that makes step costs
    compare across machines (every step here starts one interpreter)."""
    samples = []
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append(time.perf_counter() - started)
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime
    return {"wall_ms": round(statistics.median(samples) * 1000, 1), "cpu_ms": round(cpu / repeats * 1000, 1)}


CLIENT_PROBE = """\
import sys, time
started = time.perf_counter()
if sys.argv[1] == "load":
    from pytest_mlab.llm.litellm_provider import load_litellm
    load_litellm()
print(time.perf_counter() - started, flush=True)
sys.stdin.readline()
"""


def probe(load: bool) -> tuple[Usage, float]:
    """A Python process's memory after (or without) loading the real models' client, and the seconds it took."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    process = subprocess.Popen([sys.executable, "-c", CLIENT_PROBE, "load" if load else "bare"], cwd=REPO, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        took = process.stdout.readline() if process.stdout else ""
        used = usage(process.pid)
    finally:
        process.communicate("\n")
    if not took or used is None:
        raise RuntimeError("the probe ended early")
    return used, float(took)


def real_llm_client() -> dict[str, float] | None:
    """What a worker gains once it calls a real model (litellm is imported on first use, so the
    scripted runs above never load it); None where litellm is not installed."""
    try:
        bare, _ = probe(load=False)
        loaded, took = probe(load=True)
    except (RuntimeError, ValueError):
        return None
    return {"rss_mb": round(loaded.rss_mb - bare.rss_mb, 1), "pss_mb": round(loaded.size_mb - bare.size_mb, 1),
            "import_s": round(took, 2)}


# ---------------------------------------------------------------- report

def machine() -> dict[str, Any]:
    memory_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
    return {"cores": os.cpu_count(), "memory_gib": round(memory_kb / 1024 ** 2, 1), "python": sys.version.split()[0]}


def report(results: dict[str, Any]) -> None:
    box, unit = results["machine"], results["bare_python"]
    print(f"machine: {box['cores']} cores, {box['memory_gib']} GiB, Python {box['python']}; "
          f"one bare `python -c pass`: {unit['wall_ms']} ms wall, {unit['cpu_ms']} ms CPU")
    print("\nidle workers (each waiting in a test), MB per process")
    print(f"{'-n':>4} {'all up':>7} {'worker RSS mean/max':>20} {'worker PSS mean/max':>20} {'controller RSS/PSS':>19}")
    for row in results["memory"]:
        rss, pss = row["worker_rss_mb"], row["worker_pss_mb"]
        print(f"{row['workers']:>4} {row['all_waiting_after_s']:>6}s {rss['mean']:>11} / {rss['max']:<6} "
              f"{pss.get('mean', '-'):>11} / {str(pss.get('max', '-')):<6} "
              f"{row['controller_rss_mb']:>10} / {row['controller_pss_mb']}")
    client = results["real_llm_client"]
    loaded = f"+{client['rss_mb']} MB RSS, +{client['pss_mb']} MB PSS, {client['import_s']} s" if client else None
    print(f"a worker that calls a real model also loads litellm: {loaded or 'not installed'}")
    steps = results["steps"]
    print(f"\nsteps: Execute Script of a {results['work_ms']} ms sleep, {results['sandbox']} sandbox, scripted LLM; "
          f"ms per step (medians) and MB per process")
    print(f"{'-n':>4} {'steps':>6} {'cycle':>7} {'own':>6} {'overhead':>9} {'loop':>5} {'step':>6} {'x python':>9} "
          f"{'CPU':>6} {'ctl CPU':>8} {'steps/s':>8} {'worker PSS/peak':>16} {'ctl PSS/peak':>13} {'ctl CPU s':>10}")
    for row in steps:
        print(f"{row['workers']:>4} {row['steps']:>6} {row['cycle_ms']:>7} {row['own_ms']:>6} {row['overhead_ms']:>9} "
              f"{row['agent_loop_ms']:>5} {row['in_step_ms']:>6} {row['overhead_ms'] / unit['wall_ms']:>9.1f} "
              f"{str(row['cpu_per_step_ms']):>6} {str(row['controller_cpu_per_step_ms']):>8} {row['steps_per_s']:>8} "
              f"{str(row['stepping_worker_pss_mb'].get('mean', '-')):>7} / "
              f"{str(row['worker_peak_mb'].get('max', '-')):<6} "
              f"{str(row['stepping_controller_pss_mb']):>6} / {str(row['controller_peak_mb']):<5} "
              f"{str(row['controller_cpu_s']):>10}")
    one, many = steps[0], steps[-1]
    print(f"\noverhead per step, {many['workers']} workers / 1 worker: {many['overhead_ms'] / one['overhead_ms']:.2f}x")
    print("overhead: cycle (end of a step record to the end of the next) - own (the script's own time); loop: "
          "the agent's part, step: the Environment's (starting the script, snapshot); x python: overhead / one bare "
          "python; CPU: the workers', scripts included, over the window in which every run was stepping; ctl: the "
          "controller; PSS while stepping (mean over workers) / highest in the session (max)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,4,16", help="worker counts of the memory part, comma-separated")
    parser.add_argument("--step-workers", type=int, default=16, help="workers (and runs) of the steps part")
    parser.add_argument("--steps", type=int, default=40, help="steps per run")
    parser.add_argument("--work-ms", type=int, default=100, help="what each step's script sleeps")
    parser.add_argument("--sandbox", default="local", choices=list(SANDBOX_KINDS))
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    args = parser.parse_args()
    if args.steps < 5:
        parser.error("--steps must be at least 5 (a step that writes the script, runs of it, a final answer)")
    results: dict[str, Any] = {"machine": machine(), "work_ms": args.work_ms, "sandbox": args.sandbox,
                               "bare_python": bare_python(), "real_llm_client": real_llm_client()}
    with tempfile.TemporaryDirectory(prefix="mlab-scaling-") as name:
        scratch = Path(name)
        results["memory"] = [idle_workers(scratch, int(count)) for count in args.workers.split(",")]
        results["steps"] = [stepping_workers(scratch, count, args) for count in (1, args.step_workers)]
    report(results)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
        print(f"numbers: {args.json}")


if __name__ == "__main__":
    main()

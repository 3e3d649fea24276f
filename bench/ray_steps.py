"""What placing runs on a Ray node costs per step, against the same runs on the controller.

Run: python bench/ray_steps.py [--steps 12] [--concurrent 16] [--sandbox local] [--json FILE]

A Ray cluster is started on this machine (tests/cluster/ray_nodes.py: a head that runs nothing and
one node, every process on loopback), then the sessions of bench/scaling.py's step part run the
diabetes task by the ``simple`` agent on a scripted LLM, once without and once with --mlab-ray:

1. a no-op step: the script only prints (``--work-ms 0``), one run (-n 1);
2. a 50 MB-checkpoint step: the script writes 50 MB of fresh random bytes to ``checkpoint.bin``
   (new content every step, so every snapshot stores it), one run (-n 1);
3. 16 concurrent runs (-n 16) of 100 ms steps with --mlab-ray: the controller machine's CPU per
   step, which is the pytest controller's and its xdist workers' (Ray's processes are not their
   children, so bench/scaling.py's watcher leaves the node's work out), from the first step that
   ended to the last (Ray starts its workers a few at a time, so the runs do not all step at once).

Every session's CPU per step is taken over that same window. ``run_folders_mb`` is what the runs'
folders hold at the end: with --mlab-ray it all came back from the node in one archive per run.

Each pair runs in the same invocation, so they share the machine's load. Here the node is this
machine: the step times say what Ray adds around a step, not what a faster node would give.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scaling import machine, stepping_workers  # noqa: E402

from tests.cluster.ray_nodes import ray_cluster_fixture  # noqa: E402

CHECKPOINT_SCRIPT = '''\
import os
import time

started = time.perf_counter()
with open("checkpoint.bin", "wb") as handle:
    handle.write(os.urandom(50 * 1000 * 1000))
time.sleep({seconds})
print(f"work {{time.perf_counter() - started:.6f}}")
'''
KEPT = ("runs", "steps", "cycle_ms", "own_ms", "overhead_ms", "in_step_ms", "cpu_per_step_ms",
        "controller_cpu_per_step_ms", "steps_per_s")


def session(scratch: Path, workers: int, args: argparse.Namespace, *, label: str, ray: str | None,
            work_ms: int, script: str | None = None) -> dict[str, Any]:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", label)
    options = argparse.Namespace(steps=args.steps, work_ms=work_ms, sandbox=args.sandbox, label=slug,
                                 pytest_args=(f"--mlab-ray={ray}",) if ray else (), any_stepping=True)
    if script is not None:
        options.work_script = script
    started = time.monotonic()
    measured = stepping_workers(scratch, workers, options)
    runs = scratch / f"steps{workers}{slug}" / "results" / "runs"
    run_bytes = sum(path.stat().st_size for path in runs.rglob("*") if path.is_file())
    return {"label": label, "session_s": round(time.monotonic() - started, 1),
            "run_folders_mb": round(run_bytes / 1e6, 1), **{key: measured.get(key) for key in KEPT}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12, help="steps per run")
    parser.add_argument("--concurrent", type=int, default=16, help="runs at once in the controller-CPU part")
    parser.add_argument("--sandbox", default="local")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers to this file")
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": machine(), "load_before": os.getloadavg(), "sessions": []}
    with tempfile.TemporaryDirectory(prefix="mlab-ray-bench-") as name, \
            contextlib.contextmanager(ray_cluster_fixture)() as cluster:
        cluster.add_node(gpus=0, cpus=2 * args.concurrent)
        scratch = Path(name)
        for label, ray, work_ms, script in (("no-op, controller", None, 0, None),
                                            ("no-op, ray node", cluster.address, 0, None),
                                            ("50 MB checkpoint, controller", None, 0, CHECKPOINT_SCRIPT),
                                            ("50 MB checkpoint, ray node", cluster.address, 0, CHECKPOINT_SCRIPT)):
            results["sessions"].append(session(scratch, 1, args, label=label, ray=ray, work_ms=work_ms,
                                               script=script))
        results["sessions"].append(session(scratch, args.concurrent, args, label=f"{args.concurrent} runs, ray node",
                                           ray=cluster.address, work_ms=100))
    results["load_after"] = os.getloadavg()
    for row in results["sessions"]:
        print(json.dumps(row))
    print("load average before/after:", results["load_before"], results["load_after"])
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()

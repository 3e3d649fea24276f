"""The xdist controller passes Ctrl-C on to its workers' runs that it did not reach, and waits for them."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from pytest_mlab.plugin.interrupts import settle
from pytest_mlab.trace.progress import GRADING, INTERRUPTED, STEPPING, Status, progress_dir

WORKER = """
import signal, sys, time
from pathlib import Path
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
print("ready", flush=True)
deadline = time.monotonic() + 20
while not got and time.monotonic() < deadline:
    time.sleep(0.02)
Path(sys.argv[1]).write_text(str(len(got)))
Path(sys.argv[2]).unlink(missing_ok=True)  # its run is over: the status goes
"""


def status_file(out: Path, name: str, pid: int, phase: str) -> Path:
    import json

    path = progress_dir(out) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(vars(Status(f"x::{name}", name, "s", 0.0, phase, 0.0, pid=pid))))
    return path


def test_runs_still_acting_are_interrupted_and_all_are_waited_for(tmp_path: Path):
    out = tmp_path / "out"
    workers = {}
    for name, phase in (("acting", STEPPING), ("reached", INTERRUPTED), ("grading", GRADING)):
        worker = subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / name), str(progress_dir(out) /
                                   f"{name}.json")], stdout=subprocess.PIPE)
        assert worker.stdout.readline() == b"ready\n"
        status_file(out, name, worker.pid, phase)
        workers[name] = worker
    status_file(out, "dead", 2 ** 22 + 1, STEPPING)  # a killed worker's file: no such process

    settle(out, "s", time.monotonic() + 3)  # the reached run never ends by itself: waited for until then

    assert (tmp_path / "acting").read_text() == "1"  # told once, and its run ended
    assert not (progress_dir(out) / "acting.json").exists()
    for name in ("reached", "grading"):  # never told: left to finish their grading
        assert workers[name].poll() is None and not (tmp_path / name).exists()
        workers[name].send_signal(signal.SIGINT)  # their grading ends
    for worker in workers.values():
        worker.wait(10)
    settle(out, "s", time.monotonic() + 600)  # nothing left running (the dead worker's file aside): at once

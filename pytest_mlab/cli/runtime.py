"""``pytest-mlab runtime``: the agents' Python environment (pytest_mlab/task_runtime).

``pytest-mlab runtime build`` builds the locked runtime now (the README's set-up does), so that the
first test session needs no network; ``pytest-mlab runtime path`` prints the interpreter that
agents' scripts run with (what --mlab-runtime or $MLAB_TASK_RUNTIME chose); ``pytest-mlab runtime
clean`` removes the runtimes of other locks; ``pytest-mlab runtime lock`` resolves requirements.in
into requirements.lock again, after a change to the list.
"""

from __future__ import annotations

import argparse
import subprocess


def add_command(commands) -> None:
    runtime = commands.add_parser("runtime", help="the agents' Python environment: build it, show it, lock it")
    steps = runtime.add_subparsers(dest="step", required=True)
    build = steps.add_parser("build", help="build the locked runtime now, if this machine has none for the lock")
    build.set_defaults(run=_build)
    path = steps.add_parser("path", help="print the Python agents' scripts run with (building the locked one "
                                         "first if it is missing)")
    path.set_defaults(run=_path)
    clean = steps.add_parser("clean", help="remove the runtimes built for other locks (each about 4 GB)")
    clean.set_defaults(run=_clean)
    lock = steps.add_parser("lock", help="resolve requirements.in into requirements.lock with uv, keeping the "
                                         "pins it has unless a requirement changed")
    lock.set_defaults(run=_lock)


def _build(args: argparse.Namespace) -> int:
    from pytest_mlab.task_runtime.build import build_record, ensure_built, runtime_folder

    python = ensure_built(progress=print)
    record = build_record(runtime_folder())
    print(f"{python} ({record.get('packages', '?')} packages, {record.get('bytes', 0) / 1e9:.1f} GB)")
    return 0


def _path(args: argparse.Namespace) -> int:
    from pytest_mlab.task_runtime.choice import describe, task_python

    print(task_python())
    print(f"# {describe()}")
    return 0


def _clean(args: argparse.Namespace) -> int:
    from pytest_mlab.task_runtime.build import remove_other_runtimes

    removed = remove_other_runtimes()
    print(f"removed {len(removed)} runtime(s) of other locks" + "".join(f"\n  {path}" for path in removed))
    return 0


def _lock(args: argparse.Namespace) -> int:
    from pytest_mlab.errors import TaskRuntimeError
    from pytest_mlab.task_runtime.build import LOCK, lock_command

    done = subprocess.run(lock_command(LOCK))
    if done.returncode != 0:
        raise TaskRuntimeError(f"uv could not resolve the runtime's requirements (exit code {done.returncode}); "
                               "its message is above")
    print(f"wrote {LOCK}")
    return 0

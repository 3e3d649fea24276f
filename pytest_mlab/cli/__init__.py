"""``pytest-mlab``: commands around a benchmark run that are not a test session.

``pytest-mlab prepare TASK [--data VARIANT]`` prepares a task's data into the cache, the one
step allowed to reach the network; test runs then find it there. The recipe's output (download
progress) goes to the terminal; an interrupted download resumes when the command is run again.

``pytest-mlab baseline TASK [--seeds N] [--write]`` runs the unchanged starter N times and prints
(or records in the spec) the mean score and a tolerance from its spread: the paper's baseline.

``pytest-mlab --version`` prints the installed version.

``pytest-mlab clean [--hosts URL,...]`` removes what killed sessions and workers left on this
machine: their temp folders (workspaces, homes, grading copies), their cgroups (killing what still
runs in them) and their docker containers; with ``--hosts``, the containers and data volumes they
left on each named docker host. What belongs to a process that is still running is kept.

``pytest-mlab runtime build|path|lock`` builds, shows or re-locks the agents' Python environment
(the task runtime: the packages agents' scripts can import, apart from the harness's).

``pytest-mlab import PATH... --out DIR`` imports runs of the original MLAgentBench from their log
folders (cli/importing.py).

``pytest-mlab image tarball|import`` makes the runtime image remote docker hosts run from this
machine's Python, and imports it on hosts that reach no registry.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_mlab import __version__
from pytest_mlab.cache_home import default_cache_dir
from pytest_mlab.data import prepare_verbosely
from pytest_mlab.errors import MlabError

if TYPE_CHECKING:
    from pytest_mlab.sandbox.docker.hosts import DockerHost
from pytest_mlab.spec.builders import build_task
from pytest_mlab.spec.library import SpecLibrary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-mlab", description="pytest-mlab commands besides pytest itself")
    parser.add_argument("--version", action="version", version=f"pytest-mlab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    prepare = commands.add_parser("prepare", help="prepare a task's data into the cache")
    prepare.add_argument("tasks", nargs="+", metavar="TASK", help="task names, as in specs/tasks")
    prepare.add_argument("--data", default="mini", metavar="VARIANT", help="data variant (default: mini)")
    prepare.add_argument("--cache", type=Path, default=None, help=f"cache folder (default: {default_cache_dir()})")
    prepare.add_argument("--root", type=Path, default=Path("."), help="project root (default: the current folder)")
    prepare.add_argument("--tasks-dir", default="specs/tasks", help="Task specs folder, relative to the root")
    clean = commands.add_parser("clean", help="remove the temp folders, cgroups and docker containers left by "
                                              "killed pytest-mlab sessions and workers")
    clean.add_argument("--all", action="store_true", help="also remove the docker containers of sessions still running")
    clean.add_argument("--hosts", metavar="URL[,URL...]", default=None,
                       help="docker daemons to clean instead of the environment's (as --mlab-docker-hosts names them)")
    clean.set_defaults(run=_clean)
    from pytest_mlab.cli.baseline import add_command as add_baseline
    from pytest_mlab.cli.image import add_command as add_image
    from pytest_mlab.cli.results import add_commands
    from pytest_mlab.cli.importing import add_command as add_import
    from pytest_mlab.cli.runtime import add_command as add_runtime

    add_commands(commands)
    add_baseline(commands)
    add_image(commands)
    add_runtime(commands)
    add_import(commands)
    args = parser.parse_args(argv)
    try:
        return args.run(args) if "run" in args else _prepare(args)
    except MlabError as exc:
        print(f"pytest-mlab: {exc}", file=sys.stderr)
        return 2


def _prepare(args: argparse.Namespace) -> int:
    root = args.root.resolve()
    library = SpecLibrary("Task", [root / args.tasks_dir])
    cache = (args.cache or default_cache_dir()).resolve()
    for name in args.tasks:
        task = build_task(library.raw(name, wanted_by=("TASK", None, "")), library, root)
        if args.data not in task.data:
            raise MlabError(f"task '{name}' has no '{args.data}' data variant; it has: {', '.join(task.data)}")
        prepare_verbosely(task, args.data, cache, lambda line: print(line, flush=True))
    return 0


def _clean(args: argparse.Namespace) -> int:
    """Leftovers whose creating process is gone (a killed session or worker); --all: every container.
    Docker is skipped, with a note saying why, where it is not installed or not running. --hosts:
    the docker leftovers (containers, their workspace volumes, data volumes) on each named host
    instead of the environment's daemon; a host that does not answer is named and skipped."""
    from pytest_mlab.sandbox.docker.hosts import parse_hosts
    from pytest_mlab.sandbox.registry import remove_leftovers

    hosts = parse_hosts(args.hosts, "--hosts") if args.hosts else ()
    kinds = [kind for kind in ("local", "bwrap") if hosts] or None
    for line in remove_leftovers(kinds, everything=args.all, skip_unreachable=True).lines():
        print(line)
    for host in hosts:
        print(_clean_host(host, args.all))
    return 0


def _clean_host(host: "DockerHost", everything: bool) -> str:
    from pytest_mlab.sandbox.docker.leftovers import remove_leftovers as remove_docker_leftovers

    try:
        removed = remove_docker_leftovers(everything=everything, hosts=(host,))
    except MlabError as exc:
        return f"docker host {host.name}: not checked: {exc}"
    names = "".join(f"\n  {name}" for name in removed)
    return f"docker host {host.name}: removed {len(removed)} container(s) and volume(s){names}"


if __name__ == "__main__":
    sys.exit(main())

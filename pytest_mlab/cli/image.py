"""``pytest-mlab image``: put the runtime image on docker hosts that reach no image registry.

``pytest-mlab image tarball OUT.tar [--site-packages]`` writes a root filesystem made from the
Python running the command (gzip-compressed when OUT ends in .gz); ``pytest-mlab image import
TARBALL --hosts URL[,URL...]`` imports it on each host as ``pytest-mlab/runtime:1``, the image
remote hosts run unless a task names its own (see docs/docker-images.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_mlab.errors import MlabError, UsageError


def add_command(commands) -> None:
    from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE

    image = commands.add_parser("image", help=f"make the runtime image remote docker hosts run ({RUNTIME_IMAGE}) "
                                              "from this machine's Python, and import it on hosts")
    steps = image.add_subparsers(dest="step", required=True)
    tarball = steps.add_parser("tarball", help="write a root filesystem of this machine's Python as a tar")
    tarball.add_argument("out", type=Path, metavar="OUT.tar",
                         help="the tar to write (gzip-compressed if its name ends in .gz)")
    tarball.add_argument("--site-packages", action="store_true",
                         help="include the interpreter's installed packages (by default the standard library only)")
    tarball.set_defaults(run=_tarball)
    load = steps.add_parser("import", help=f"import a runtime tarball on docker hosts as {RUNTIME_IMAGE}")
    load.add_argument("tarball", type=Path, metavar="TARBALL", help="a tar written by 'pytest-mlab image tarball'")
    load.add_argument("--hosts", metavar="URL[,URL...]", required=True,
                      help="docker daemons to import it on (as --mlab-docker-hosts names them)")
    load.set_defaults(run=_import)


def _tarball(args: argparse.Namespace) -> int:
    from pytest_mlab.sandbox.docker.runtime_tarball import write_runtime_tarball

    print(write_runtime_tarball(args.out, site_packages=args.site_packages).line())
    return 0


def _import(args: argparse.Namespace) -> int:
    """One line per host; a host that fails is named with why, and the others still get the image."""
    from pytest_mlab.sandbox.docker.hosts import parse_hosts
    from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE
    from pytest_mlab.sandbox.docker.runtime_tarball import import_runtime_image, require_tarball

    hosts = parse_hosts(args.hosts, "--hosts")
    if not hosts:
        raise UsageError("--hosts names no docker daemon; write unix:///var/run/docker.sock, tcp://HOST:PORT "
                         "or ssh://USER@HOST, comma-separated")
    require_tarball(args.tarball)
    failed = 0
    for host in hosts:
        try:
            image_id = import_runtime_image(host.client(), args.tarball, RUNTIME_IMAGE, host=host.name)
        except MlabError as exc:
            failed += 1
            print(f"docker host {host.name}: not imported: {exc}", flush=True)
            continue
        print(f"docker host {host.name}: imported {RUNTIME_IMAGE} ({image_id})", flush=True)
    return 1 if failed else 0

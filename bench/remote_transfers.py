"""Bytes over the socket for a step on a remote docker host: what moves between the harness and
the host when a step changes nothing, a few files or many beside a large unchanged file, a sparse
file, or when a folder is unreadable.

Run: python bench/remote_transfers.py --remote tcp://HOST:PORT [--large-mb 200] [--sparse-gb 2]

The remote host needs the runtime image (docs/docker-images.md); a second daemon on a loopback port
serves (docs/scaling.md shows how to start one). The harness talks to the host through a relay that
counts the bytes each way (tests/sandbox/tcp_proxy.py), so the figures are the socket's, not an
estimate. Bytes do not depend on the machine; the seconds printed beside them are this machine's,
under whatever load it had.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mlab.sandbox import SandboxOptions, open_sandbox  # noqa: E402
from pytest_mlab.sandbox.docker.hosts import parse_hosts, use_pool  # noqa: E402
from tests.sandbox.tcp_proxy import Relay  # noqa: E402

SMALL = "for index in range({count}):\n    open(f'small-{{step}}-{{index}}.txt', 'w').write('x' * 100)\n"


def step(box, relay: Relay, name: str, code: str) -> tuple[str, int, int, float, float]:
    """Run ``code`` as a step; (name, bytes sent, bytes received, seconds, harness CPU seconds)."""
    box.write("step.py", code.encode())
    sent, received = relay.counts()
    cpu, started = time.process_time(), time.perf_counter()
    result = box.exec([box.python, "step.py"], timeout=600, output_limit=10_000)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert result.returncode == 0, result.stderr
    after_sent, after_received = relay.counts()
    return name, after_sent - sent, after_received - received, seconds, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--remote", required=True, help="the remote daemon, tcp://HOST:PORT")
    parser.add_argument("--large-mb", type=int, default=200, help="the unchanged large file beside the steps")
    parser.add_argument("--sparse-gb", type=int, default=2)
    args = parser.parse_args()
    relay = Relay(args.remote)
    session = f"bench-transfers-{os.getpid()}"
    use_pool(parse_hosts(relay.url), None, session)
    rows = []
    try:
        with open_sandbox("docker", options=SandboxOptions(label="bench-transfers")) as box:
            rows.append(step(box, relay, f"write a {args.large_mb} MiB file",
                             f"open('large.bin', 'wb').write(b'l' * ({args.large_mb} << 20))"))
            rows.append(step(box, relay, "no-op step", "pass"))
            for count in (32, 200):
                code = SMALL.format(count=count).replace("{step}", str(count))
                rows.append(step(box, relay, f"{count} small files", code))
            rows.append(step(box, relay, "no-op step again", "pass"))
            rows.append(step(box, relay, "chmod 000 a folder",
                             "import os; os.makedirs('locked'); os.chmod('locked', 0)"))
            rows.append(step(box, relay, "no-op, folder locked", "pass"))
            rows.append(step(box, relay, f"a {args.sparse_gb} GiB sparse file",
                             f"f = open('sparse.bin', 'wb'); f.seek({args.sparse_gb} << 29); f.write(b'x'); "
                             f"f.truncate({args.sparse_gb} << 30)"))
            info = (box.workspace / "sparse.bin").stat()
            sparse_note = (f"sparse file on the harness: {info.st_size >> 20} MiB long, "
                           f"{info.st_blocks * 512 >> 10} KiB on disk")
    finally:
        from pytest_mlab.sandbox.docker.leftovers import remove_leftovers

        remove_leftovers()
        relay.close()
    print(f"{'step':28} {'sent':>12} {'received':>12} {'seconds':>8} {'CPU s':>7}")
    for name, sent, received, seconds, cpu in rows:
        print(f"{name:28} {sent:12,d} {received:12,d} {seconds:8.2f} {cpu:7.2f}")
    print(sparse_note)


if __name__ == "__main__":
    main()

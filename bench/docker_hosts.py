"""What a remote docker host adds to a step: the workspace moved in and out by archive around
every command, against the local daemon's bind mount.

Run: python bench/docker_hosts.py --remote tcp://HOST:PORT [--rounds 5] [--data-files 200] [--checkpoint-mb 50]

The remote host needs the runtime image (docs/docker-images.md); a second daemon on a loopback port
serves (docs/scaling.md shows how to start one). Each round opens one sandbox per host, with
the same data linked in, and runs, interleaved, on both: a command that does nothing, and one
that writes a checkpoint. Costs are given as a multiple of the same host's bare ``docker exec``
of the no-op command (measured in the same round), so they compare across machines; absolute
milliseconds are for this machine only. The first command of each sandbox (container start,
data volume) is reported apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mlab.sandbox import SandboxOptions, open_sandbox  # noqa: E402
from pytest_mlab.sandbox.docker.hosts import parse_hosts, use_pool  # noqa: E402

LOCAL = "unix:///var/run/docker.sock"
NOOP = "pass"
CHECKPOINT = "import os\nopen('checkpoint.pt', 'wb').write(os.urandom({size}))\n"


def one_round(url: str, data: Path, checkpoint_mb: int, session: str) -> dict[str, float]:
    use_pool(parse_hosts(url), None, session)
    times: dict[str, float] = {}
    with open_sandbox("docker", options=SandboxOptions(label="bench-hosts")) as box:
        for file in sorted(data.iterdir()):
            box.copy_in(file, file.name, link=True)
        box.write("noop.py", NOOP.encode())
        box.write("train.py", CHECKPOINT.format(size=checkpoint_mb << 20).encode())
        started = time.perf_counter()
        box.exec([box.python, "noop.py"], timeout=120, output_limit=10_000)
        times["first command"] = time.perf_counter() - started
        for name, script in (("no-op step", "noop.py"), ("checkpoint step", "train.py"), ("step after", "noop.py")):
            started = time.perf_counter()
            result = box.exec([box.python, script], timeout=300, output_limit=10_000)
            times[name] = time.perf_counter() - started
            assert result.returncode == 0, result.stderr
        container = box._ensure_container()
        started = time.perf_counter()
        container.exec_run([box.python, "-c", NOOP])
        times["bare docker exec"] = time.perf_counter() - started
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--remote", required=True, help="the remote daemon, tcp://HOST:PORT")
    parser.add_argument("--local", default=LOCAL, help=f"the local daemon (default: {LOCAL})")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data-files", type=int, default=200)
    parser.add_argument("--checkpoint-mb", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch)
        for index in range(args.data_files):
            (data / f"part-{index:04d}.csv").write_bytes(os.urandom(16 << 10))
        samples: dict[str, dict[str, list[float]]] = {args.local: {}, args.remote: {}}
        for round_index in range(args.rounds):
            for url in (args.local, args.remote) if round_index % 2 == 0 else (args.remote, args.local):
                for name, seconds in one_round(url, data, args.checkpoint_mb, f"bench-{os.getpid()}").items():
                    samples[url].setdefault(name, []).append(seconds)
        from pytest_mlab.sandbox.docker.leftovers import remove_leftovers

        use_pool(parse_hosts(f"{args.local},{args.remote}"), None, f"bench-{os.getpid()}")
        remove_leftovers()
    print(f"{args.rounds} rounds, {args.data_files} data files, {args.checkpoint_mb} MB checkpoint; "
          "median ms (x the host's bare docker exec)")
    print(f"{'':18} {'local':>20} {'remote':>20} {'remote/local':>13}")
    for name in ("first command", "no-op step", "checkpoint step", "step after", "bare docker exec"):
        local, remote = (statistics.median(samples[url][name]) for url in (args.local, args.remote))
        base_local = statistics.median(samples[args.local]["bare docker exec"])
        base_remote = statistics.median(samples[args.remote]["bare docker exec"])
        print(f"{name:18} {local * 1e3:9.0f} ({local / base_local:5.1f}x) {remote * 1e3:9.0f} "
              f"({remote / base_remote:5.1f}x) {remote / local:12.2f}x")


if __name__ == "__main__":
    main()

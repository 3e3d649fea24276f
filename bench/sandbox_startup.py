"""Per-item start-up cost of each sandbox backend: open, populate, first script, close.

Run: python bench/sandbox_startup.py [--runs 10] [--kinds local,bwrap]

One "item" opens a sandbox as the runner does, copies in 5 starter files, hard-links a 50 MB
data file, runs ``python -c pass`` once and closes the sandbox. A second column times one more
``python -c pass`` in an already open sandbox (what every further Execute Script pays).
Backends that cannot run here are listed with the reason.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mlab.sandbox import SandboxOptions, open_sandbox  # noqa: E402
from pytest_mlab.sandbox.registry import SANDBOX_KINDS, sandbox_unavailable  # noqa: E402

PASS = ["-c", "pass"]


def item(kind: str, assets: Path) -> tuple[float, float]:
    """Seconds for one whole item, and for one further script in the open sandbox."""
    started = time.perf_counter()
    with open_sandbox(kind, options=SandboxOptions(memory=2 * 2**30, label="bench")) as sandbox:
        for path in sorted(assets.glob("*.py")):
            sandbox.copy_in(path, path.name)
        sandbox.copy_in(assets / "train.csv", "train.csv", link=True)
        sandbox.exec([sandbox.python, *PASS], timeout=60, output_limit=65536)
        again = time.perf_counter()
        sandbox.exec([sandbox.python, *PASS], timeout=60, output_limit=65536)
        further = time.perf_counter() - again
    return time.perf_counter() - started - further, further


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--kinds", default=",".join(kind for kind in SANDBOX_KINDS if kind != "auto"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        assets = Path(folder)
        for index in range(5):
            (assets / f"file{index}.py").write_text("print('hello')\n" * 50)
        (assets / "train.csv").write_bytes(b"0123456789abcdef\n" * (50 * 2**20 // 17))
        for kind in args.kinds.split(","):
            reason = sandbox_unavailable(kind)
            if reason:
                print(f"{kind:8s} cannot run here: {reason}")
                continue
            item(kind, assets)  # warm-up: imports, page cache, availability probe
            samples = [item(kind, assets) for _ in range(args.runs)]
            whole = statistics.median(sample[0] for sample in samples)
            further = statistics.median(sample[1] for sample in samples)
            print(f"{kind:8s} item start-up (open, populate, first script, close) {whole * 1000:7.1f} ms   "
                  f"each further script {further * 1000:7.1f} ms   (median of {args.runs})")


if __name__ == "__main__":
    main()

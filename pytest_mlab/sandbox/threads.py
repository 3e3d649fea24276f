"""How many threads a sandboxed script's numeric libraries start: the CPU share of its item.

OpenMP, the BLAS libraries, PyTorch and TensorFlow each start as many threads as the machine has
cores. Under ``pytest -n N`` the N items' scripts run at once, so on C cores N scripts start
N x C busy threads: they preempt each other in the middle of parallel regions and OpenMP's
workers spin while they wait, which costs CPU time and wall time without doing more work. Each
sandboxed command therefore gets ``max(1, C // N)`` threads through the libraries' environment
variables, set only where N > 1; a single item keeps the libraries' defaults, as the original
MLAgentBench ran its scripts. A timed measurement's executions get the same share as any other
script: the submission and the starter alike, so their ratio compares like with like. Code in the
workspace can still ask for more threads itself (``torch.set_num_threads``); these are defaults,
not limits.
"""

from __future__ import annotations

import os

# the variables the common numeric libraries read at start-up for their thread pools
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "TF_NUM_INTRAOP_THREADS",
                    "TF_NUM_INTEROP_THREADS", "RAYON_NUM_THREADS", "POLARS_MAX_THREADS")
WORKERS_VARIABLE = "PYTEST_XDIST_WORKER_COUNT"  # set by pytest-xdist in every worker


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or taskset narrows)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def concurrent_items() -> int:
    """How many items of this session run at once: its xdist workers, or 1."""
    try:
        return max(1, int(os.environ.get(WORKERS_VARIABLE, "1")))
    except ValueError:
        return 1


def cpu_share(cores: int, items: int) -> int | None:
    """Threads per item when ``items`` share ``cores``; None when one item has them all."""
    return None if items <= 1 else max(1, cores // items)


def thread_environment() -> dict[str, str]:
    """The thread variables for a command started now: empty outside xdist (library defaults), else
    every variable set to the item's CPU share."""
    share = cpu_share(usable_cores(), concurrent_items())
    return {} if share is None else {name: str(share) for name in THREAD_VARIABLES}

"""Whether a task can run on this machine: its data variant, packages, environment variables, GPU.

Asked at collection, so that an item that cannot run is skipped with the command that fixes it.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
from pathlib import Path
from typing import Callable

from pytest_mlab.data.cache import is_prepared
from pytest_mlab.errors import MlabError
from pytest_mlab.sandbox.docker.hosts import pool
from pytest_mlab.spec import models


# Packages the tasks extra cannot hold, with the command that installs them.
SEPARATE_INSTALLS = {"clrs": "pip install --no-deps dm-clrs==2.0.0"}


def unmet_requirement(task: models.TaskSpec, variant: str, cache_dir: Path, *, preparing: bool = False,
                      cluster_gpus: Callable[[], int] | None = None) -> str | None:
    """Why this task cannot run here, naming what fixes it; None when it can. ``preparing``: data
    that is not prepared yet will be, before the first run (--mlab-prepare). ``cluster_gpus``: the
    most GPUs one node of the cluster that places runs has (--mlab-ray), asked instead of this
    machine's nvidia-smi."""
    if variant not in task.data:
        return (f"task '{task.name}' has no '{variant}' data variant (it has: {', '.join(task.data)}); "
                f"run with --mlab-data={next(iter(task.data))}")
    if task.data[variant].requires.network and not preparing and not is_prepared(task, variant, cache_dir):
        return (f"the '{variant}' data of task '{task.name}' is not prepared, and preparing it needs the network: "
                f"run `pytest-mlab prepare {task.name} --data {variant}` first, or add --mlab-prepare "
                f"(nothing downloads during a test run)")
    needs = task.requires.merged(task.data[variant].requires)
    missing = [name for name in needs.packages if not _importable(name)]
    if missing:
        commands = ['pip install -e ".[tasks]"'] + [SEPARATE_INSTALLS[name] for name in missing if name in SEPARATE_INSTALLS]
        return f"needs the Python packages {', '.join(missing)}: {' && '.join(commands)} (or install them yourself)"
    unset = [name for name in needs.env if not os.environ.get(name)]
    if unset:
        return f"needs the environment variables {', '.join(unset)}: export {unset[0]}=..."
    if cluster_gpus is not None:
        wanted = task.gpus_per_run(variant)
        most = cluster_gpus() if wanted else 0
        if wanted > most:
            return (f"needs {wanted} GPU(s) on one node, and no node of the Ray cluster (--mlab-ray) has more than "
                    f"{most}: add a node with `ray start --address=HEAD:PORT --num-gpus={wanted}`")
    elif needs.gpu:
        return _no_gpu()
    return None


@functools.lru_cache(maxsize=None)
def _importable(package: str) -> bool:
    """Asked once per package per process: a thousand tasks share a handful of packages. A dotted
    name imports its parents to be found; a missing parent means the package is missing too."""
    try:
        return importlib.util.find_spec(package) is not None
    except ImportError:
        return False


def _no_gpu() -> str | None:
    """Why no GPU can run the task, or None. With --mlab-docker-hosts the hosts are asked, not
    this machine: a controller without GPUs drives GPU hosts. A lookup that failed says so."""
    if pool():
        from pytest_mlab.sandbox.docker.gpus import pool_has_gpu

        try:
            return None if pool_has_gpu() else "needs a GPU, and no docker host of --mlab-docker-hosts has one"
        except MlabError as exc:
            return f"needs a GPU, and the docker hosts could not be asked for theirs: {exc}"
    return None if _nvidia_smi_here() else "needs a GPU, none is visible here (nvidia-smi was not found)"


@functools.lru_cache(maxsize=None)
def _nvidia_smi_here() -> bool:
    return shutil.which("nvidia-smi") is not None

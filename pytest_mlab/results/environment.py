"""Where and from what results were produced: the report's header, so a table read months later
still says which commit of the project ran, on which machine, when.

Kept cheap (a session ends with it): two git calls and, only where nvidia-smi exists, one
listing of GPUs; nothing imports torch or probes drivers.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

UNKNOWN = "unknown"
PROBE_TIMEOUT = 10.0  # seconds for each git or nvidia-smi call


def describe_environment(project: Path | str | None = None) -> dict[str, Any]:
    """Date, the project's commit (``unknown`` outside a git checkout), machine, GPUs, and the
    Python agents' scripts ran with (the task runtime and its lock's digest)."""
    root = Path(project) if project else Path.cwd()
    commit = _output(["git", "-C", str(root), "rev-parse", "HEAD"])
    changed = _output(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"]) if commit else None
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": commit or UNKNOWN,
            "uncommitted_changes": bool(changed) if changed is not None else None,
            "hostname": platform.node() or UNKNOWN, "platform": platform.platform(),
            "python": platform.python_version(), "cpus": os.cpu_count(), "gpus": _gpus(),
            "agents_python": _agents_python()}


def _agents_python() -> str:
    from pytest_mlab.errors import MlabError
    from pytest_mlab.task_runtime.choice import describe

    try:
        return describe()
    except (MlabError, OSError) as exc:
        return f"unknown ({exc})"


def _gpus() -> list[str]:
    """The GPUs nvidia-smi lists; none where it is absent or fails."""
    if shutil.which("nvidia-smi") is None:
        return []
    listing = _output(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    return [line.strip() for line in (listing or "").splitlines() if line.strip()]


def _output(command: list[str]) -> str | None:
    """The command's stripped stdout, or None when it is missing, fails or hangs."""
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return completed.stdout.strip() if completed.returncode == 0 else None

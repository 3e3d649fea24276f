"""The cache folder pytest-mlab keeps prepared data (and, under it, the agents' runtimes) in by
default; its own module at the bottom of the package, so that showing an option's default loads
nothing else and every part may ask it."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pytest-mlab"

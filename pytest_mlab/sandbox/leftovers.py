"""What killed workers and sessions leave behind on this machine, and its removal.

A process killed with SIGKILL (an xdist worker the OOM killer took, a session stopped with
``kill -9``) runs no clean-up: its workspaces and private homes stay in the temp folder, its
cgroups stay in the cgroup file system, and whatever escaped its process tree keeps running in
them. Everything of that kind is named for its creator (:mod:`.owner`), so the next session's
controller and ``pytest-mlab clean`` remove exactly the leftovers of processes that are gone.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pytest_mlab.sandbox import cgroups
from pytest_mlab.sandbox.owner import name_owner_gone


@dataclass
class Swept:
    """What one sweep removed."""

    folders: list[Path] = field(default_factory=list)
    groups: list[Path] = field(default_factory=list)

    def describe(self) -> str:
        return f"removed {len(self.folders)} temp folder(s) and {len(self.groups)} cgroup(s) of dead processes"


def sweep_temp_folders(root: Path | None = None) -> list[Path]:
    """Remove ``mlab-<kind>-<pid>-<start>-*`` folders in the temp folder whose creator is gone.
    Symlinks and files are never followed or removed; folders of live processes stay."""
    from pytest_mlab.sandbox.local import _remove_tree

    root = Path(root or tempfile.gettempdir())
    removed = []
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return removed
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and name_owner_gone(entry.name):
            _remove_tree(Path(entry.path))
            if not os.path.lexists(entry.path):
                removed.append(Path(entry.path))
    return removed


def sweep() -> Swept:
    """Remove the temp folders and cgroups of dead processes (never those of live ones)."""
    return Swept(folders=sweep_temp_folders(), groups=cgroups.sweep())

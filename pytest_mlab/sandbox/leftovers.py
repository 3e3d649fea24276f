"""What killed workers and sessions leave behind on this machine, and its removal.

A process killed with SIGKILL (an xdist worker the OOM killer took, a session stopped with
``kill -9``) runs no clean-up: its workspaces and private homes stay in the temp folder, its
cgroups stay in the cgroup file system, and whatever escaped its process tree keeps running in
them. Everything of that kind is named for its creator (:mod:`.owner`), so the next session's
controller and ``pytest-mlab clean`` remove exactly the leftovers of processes that are gone.
Both go through :func:`pytest_mlab.sandbox.registry.remove_leftovers`, which also has each backend
remove its own (docker: containers) and reports all of it as a :class:`Cleanup`.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pytest_mlab.sandbox import cgroups
from pytest_mlab.sandbox.owner import name_owner_gone
from pytest_mlab.sandbox.quota_mount import unmount_below
from pytest_mlab.sandbox.workspace import remove_tree


@dataclass
class Swept:
    """What one sweep removed."""

    folders: list[Path] = field(default_factory=list)
    groups: list[Path] = field(default_factory=list)

    def describe(self) -> str:
        return f"removed {len(self.folders)} temp folder(s) and {len(self.groups)} cgroup(s) of dead processes"


@dataclass(frozen=True)
class Removed:
    """One backend's own leftovers (docker: its containers): the names removed, or why they
    could not be looked for."""

    kind: str
    noun: str
    names: list[str]
    unchecked: str | None = None

    def describe(self) -> str:
        if self.unchecked is not None:
            return f"{self.kind} {self.noun}s: not checked ({self.unchecked})"
        return f"removed {len(self.names)} {self.noun}(s){': ' if self.names else ''}{', '.join(self.names)}"


@dataclass
class Cleanup:
    """What one clean-up removed: the sweep's, then each backend's own."""

    swept: Swept
    backends: list[Removed]

    def lines(self) -> list[str]:
        """The report ``pytest-mlab clean`` prints."""
        paths = [f"  {path}" for path in [*self.swept.folders, *self.swept.groups]]
        return [self.swept.describe(), *paths, *(removed.describe() for removed in self.backends)]


def sweep_temp_folders(root: Path | None = None) -> list[Path]:
    """Remove ``mlab-<kind>-<pid>-<start>-*`` folders in the temp folder whose creator is gone.
    Symlinks and files are never followed or removed; folders of live processes stay."""
    root = Path(root or tempfile.gettempdir())
    removed = []
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return removed
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and name_owner_gone(entry.name):
            unmount_below(Path(entry.path))  # a quota's image and overlay (quota_mount.py)
            remove_tree(Path(entry.path))
            if not os.path.lexists(entry.path):
                removed.append(Path(entry.path))
    return removed


def sweep() -> Swept:
    """Remove the temp folders and cgroups of dead processes (never those of live ones)."""
    return Swept(folders=sweep_temp_folders(), groups=cgroups.sweep())

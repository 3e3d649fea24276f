"""A walk over a folder the agent may have filled, that no folder can turn into a crash.

``os.walk`` recurses (one Python frame per level before 3.12), so a chain of folders a few thousand
deep raises RecursionError, and it lists a million files if they are there. The harness walks
workspaces (handing them to docker's sandbox user, stamping them for a remote container) and
cgroup trees an agent could have nested; this walk keeps its own stack, stops at a depth and a
number of entries, and skips what it cannot read. Snapshots have their own, stricter walk
(:mod:`pytest_mlab.trace.snapshots.workspace`), which fails the run instead of stopping.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

from pytest_mlab.spec.models import DEFAULT_WORKSPACE_DEPTH, DEFAULT_WORKSPACE_FILES


@dataclass(frozen=True)
class Bound:
    """How far a walk goes: ``depth`` folders below the top, ``entries`` names in all."""

    depth: int = DEFAULT_WORKSPACE_DEPTH
    entries: int = DEFAULT_WORKSPACE_FILES


def walk_tree(top: str | os.PathLike[str], bound: Bound = Bound(), *,
              folders_only: bool = False) -> Iterator[tuple[str, os.stat_result]]:
    """Yield ``(path, lstat)`` for every entry below ``top`` (links never followed), each folder
    before what it holds, in name order. Iterative: an explicit stack of paths, one folder listed
    at a time. Folders deeper than ``bound.depth`` are not entered, and the walk ends after
    ``bound.entries`` entries; folders that cannot be listed (gone, unreadable, a path too long)
    are skipped. ``folders_only`` yields folders alone (a cgroup tree's groups)."""
    stack: list[tuple[str, int]] = [(os.fspath(top), 0)]
    seen = 0
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as scan:
                names = sorted(entry.name for entry in scan)
        except OSError:
            continue
        below = []
        for name in names:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(info.st_mode)
            if is_dir or not folders_only:
                seen += 1
                if seen > bound.entries:
                    return
                yield path, info
            if is_dir and depth < bound.depth:
                below.append((path, depth + 1))
        stack.extend(reversed(below))

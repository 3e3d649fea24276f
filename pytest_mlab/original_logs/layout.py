"""Where the runs are in what the user gives ``pytest-mlab import``: one run's folder, a folder of
runs at any depth, an ``env_log`` folder itself, or an archive of any of these (.tar, .tar.gz,
.tgz, .tar.bz2, .tar.xz, .zip), unpacked into a scratch folder first, refusing members that would
land outside it.

A run of the original is the folder holding ``env_log/trace.json`` (the environment's log),
``agent_log/`` (the agent's) and ``log`` (the runner's output); its path ends in
``<experiment>/<task>/<run>``.
"""

from __future__ import annotations

import os
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.errors import OriginalLogError

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")


@dataclass(frozen=True)
class FoundRun:
    """A run: its env_log folder (the one holding trace.json), the run's own folder (env_log's
    parent, or env_log itself when given alone), and the names its path gives (empty where the
    path is too short)."""

    env_log: Path
    root: Path
    shown: str  # how messages and the row name it: the path as given, inside its archive where it was one
    experiment: str
    task_folder: str
    run: str


def is_archive(path: Path) -> bool:
    return path.is_file() and path.name.endswith(ARCHIVE_SUFFIXES)


def unpack(archive: Path, into: Path) -> Path:
    """The archive's members under ``into``; a member that would land outside it (an absolute
    path, ``..``, a link out) is an OriginalLogError naming it."""
    target = into / archive.name
    target.mkdir(parents=True)
    try:
        if archive.name.endswith(".zip"):
            with zipfile.ZipFile(archive) as bundle:
                for name in bundle.namelist():
                    _inside(target, name, archive)
                bundle.extractall(target)
        else:
            with tarfile.open(archive) as bundle:
                bundle.extractall(target, filter="data")
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
        raise OriginalLogError(f"{archive}: cannot unpack it ({exc}); give a .tar, .tar.gz, .tgz, .tar.bz2, "
                               f".tar.xz or .zip of run folders, or the folder itself") from None
    return target


def _inside(target: Path, name: str, archive: Path) -> None:
    resolved = (target / name).resolve()
    if resolved != target.resolve() and target.resolve() not in resolved.parents:
        raise OriginalLogError(f"{archive}: its member {name!r} would be written outside the folder it is "
                               "unpacked into; refusing the archive")


def find_runs(folder: Path, shown_as: str) -> list[FoundRun]:
    """Every run under ``folder`` (itself included), in path order: each folder holding a
    ``trace.json`` and named ``env_log`` or holding ``traces/``."""
    found = []
    for trace in sorted(folder.rglob("trace.json")):
        env_log = trace.parent
        if env_log.name != "env_log" and not (env_log / "traces").is_dir():
            continue
        root = env_log.parent if env_log.name == "env_log" else env_log
        names = list(root.resolve().parts[-3:])
        experiment, task_folder, run = ([""] * 3 + names)[-3:]
        inside = os.path.relpath(root, folder)
        shown = shown_as if inside in (".", "..") else os.path.join(shown_as, inside)
        found.append(FoundRun(env_log, root, shown, experiment, task_folder, run))
    return found

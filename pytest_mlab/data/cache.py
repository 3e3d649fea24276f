"""Prepare a task's data variant once and keep it in the cache.

Layout: ``<cache>/<task>/<variant>/public`` (files the agent sees, linked read-only into each
workspace) and ``.../hidden`` (answers; only the grader gets this path). Recipes that need the
network also get ``<cache>/downloads/<task>/``, which survives re-preparation so downloads resume. A lock file makes xdist
workers that start the same task at once prepare it only once.

The cache entry records the recipe's hash and, for every file, public and hidden, its size, mtime,
inode, ctime and sha256. Before each run and again before each grading (:func:`prepare_data`) the
files are checked: cheaply by the stat (the ctime cannot be set back, so a rewrite that restores
size and mtime still shows), and by the digest where the stat moved (the harness's own hard links
move the ctime of public files; ``data-digests.json`` beside them, pytest_mlab/trace/snapshots/
data_digests.py, spares hashing them again). A changed recipe is prepared again quietly; an altered,
missing or added file is prepared again with a :class:`~pytest_mlab.errors.DataCacheWarning` naming
the task and the file: under the local backend an agent can write the cache (docs/sandboxes.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.errors import DataCacheWarning, DataError
from pytest_mlab.spec.models import TaskSpec
from pytest_mlab.task_code import call_task_function
from pytest_mlab.trace.snapshots.data_digests import digest_of
from pytest_mlab.turns import exclusive_turn

MANIFEST = "prepared.json"
MANIFEST_FORMAT = 2  # every file, public and hidden, with its stat and digest
DATA_DIGESTS = "data-digests.json"  # the data files' digests, kept by the snapshot store and the checks here
PREPARE_TIMEOUT = 3600.0
# Full variants download gigabytes over links of any speed; an interrupted download resumes, so
# no time limit is better than one that kills a slow but healthy transfer.
DOWNLOAD_TIMEOUT: float | None = None


@dataclass(frozen=True)
class PreparedData:
    public: Path
    hidden: Path

    def public_files(self) -> list[str]:
        """Workspace-relative paths of the data files, sorted."""
        return sorted(path.relative_to(self.public).as_posix()
                      for path in self.public.rglob("*") if path.is_file())


def is_prepared(task: TaskSpec, variant: str, cache_dir: Path, *, seed: int = 0) -> bool:
    """Whether the cache holds this variant, current with its recipe (no lock, no hashing: a hint
    for skips; :func:`prepare_data` checks the files before it trusts them)."""
    manifest = _manifest(cache_dir / task.name / variant)
    return manifest is not None and manifest["fingerprint"] == _recipe_fingerprint(task, variant, seed)


def prepare_data(task: TaskSpec, variant: str, cache_dir: Path, *, seed: int = 0, stream: bool = False,
                 notify: Callable[[str], None] | None = None) -> PreparedData:
    """Prepare the variant unless the cache holds it; ``stream`` shows the recipe's output (progress).
    ``notify`` hears, in words, when this call waits for another process that prepares the same
    data and when it prepares the data itself: the slow cases, which a watcher must be told of."""
    entry = cache_dir / task.name / variant
    entry.parent.mkdir(parents=True, exist_ok=True)
    fingerprint = _recipe_fingerprint(task, variant, seed)
    tell = notify or (lambda _what: None)
    with exclusive_turn(entry.parent / f".{variant}.lock",
                        lambda: tell(f"waiting for {task.name} data ({variant})")):
        altered = _altered(entry, fingerprint)
        if altered is not None:
            if altered:
                message = (f"the prepared '{variant}' data of task '{task.name}' in {entry} was altered since it "
                           f"was prepared ({', '.join(altered[:5])}{', ...' if len(altered) > 5 else ''}): "
                           f"preparing it again")
                warnings.warn(DataCacheWarning(message), stacklevel=2)
                tell(message)
            tell(f"preparing {task.name} data ({variant})")
            _prepare(task, variant, entry, fingerprint, seed, stream)
    return PreparedData(entry / "public", entry / "hidden")


def _recipe_fingerprint(task: TaskSpec, variant: str, seed: int) -> str:
    """Changes whenever the recipe's file, function or seed changes, or any file of the assets
    folder a recipe may read (a text it copies, a module it imports): all but the starter files,
    the reference solution, the grader and the measure script, whose edits leave the data as it is."""
    digest = hashlib.sha256(f"{task.data[variant].prepare}:{seed}".encode())
    arguments = task.recipe_arguments(variant)
    if arguments:  # where a task made from a folder elsewhere finds it
        digest.update(json.dumps(arguments, sort_keys=True).encode())
    for path in _recipe_inputs(task):  # the recipe's own file among them
        digest.update(f"\0{path.relative_to(task.assets).as_posix()}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _recipe_inputs(task: TaskSpec) -> list[Path]:
    """The assets folder's files that preparing may depend on, the recipe's own included."""
    skipped = {task.env_dir, task.assets / task.reference_files}
    graders = {task.assets / task.metric.grader.file, *([task.assets / task.metric.measure.script]
                                                           if task.metric.measure else [])}
    found = []
    for path in sorted(task.assets.rglob("*")):
        if (not path.is_file() or path in graders or any(folder in path.parents for folder in skipped)
                or "__pycache__" in path.parts):
            continue
        found.append(path)
    return found


def _for_the_user(error: str) -> str:
    """A recipe's failure as the user must read it: when the recipe raised our DataError (the
    helpers do for missing credentials, a refused download, ...), its message says what to do, and
    the traceback in front of it only hides that; any other error keeps its traceback (a bug)."""
    _traceback, marker, message = error.rpartition(f"\n{DataError.__module__}.{DataError.__name__}: ")
    return message.strip() if marker else error


Stamp = list  # [size, mtime_ns, inode, ctime_ns, sha256]


def _stat_part(path: Path) -> list[int]:
    st = path.lstat()
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


def _digest(path: Path, digests: Path) -> str:
    """A file's sha256; a link's target (a recipe may link one file to another)."""
    return f"link:{os.readlink(path)}" if path.is_symlink() else digest_of(path, digests)


def _files(entry: Path) -> list[Path]:
    """Every file and link of the prepared data, public and hidden, sorted."""
    return sorted(path for part in ("public", "hidden") for path in (entry / part).rglob("*")
                  if path.is_symlink() or not path.is_dir())


def _file_stamps(entry: Path) -> dict[str, Stamp]:
    """Each file's stat and sha256, keyed by its path under ``entry`` (``public/...``, ``hidden/...``)."""
    digests = entry / DATA_DIGESTS
    return {path.relative_to(entry).as_posix(): [*_stat_part(path), _digest(path, digests)]
            for path in _files(entry)}


def _manifest(entry: Path) -> dict | None:
    """The entry's manifest, or None if it is missing, corrupt or of another format."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if (not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT
            or not isinstance(manifest.get("files"), dict)):
        return None
    return manifest


def _altered(entry: Path, fingerprint: str) -> list[str] | None:
    """None when the entry is current; else the files that changed since it was stamped (empty
    when it was never prepared, or by another recipe or format: nothing to warn of)."""
    manifest = _manifest(entry)
    if manifest is None or manifest.get("fingerprint") != fingerprint:
        return []
    stamps: dict[str, Stamp] = manifest["files"]
    present = {path.relative_to(entry).as_posix(): path for path in _files(entry)}
    altered = sorted(set(present).symmetric_difference(stamps))
    for name in sorted(set(present) & set(stamps)):
        stamp = stamps[name]
        try:
            if _stat_part(present[name]) == stamp[:4]:
                continue  # the ctime cannot be set back: unchanged since it was stamped
            if _digest(present[name], entry / DATA_DIGESTS) == stamp[4]:
                continue  # only its stat moved (the harness links public files into workspaces)
        except (OSError, IndexError, TypeError):
            pass
        altered.append(name)
    return altered or None


def prepare_verbosely(task: TaskSpec, variant: str, cache_dir: Path, write: Callable[[str], None], *,
                      seed: int = 0) -> PreparedData:
    """:func:`prepare_data` for a person watching: says what happens and shows the recipe's progress."""
    write(f"{task.name} [{variant}]: {'already prepared' if is_prepared(task, variant, cache_dir, seed=seed) else 'preparing...'}")
    data = prepare_data(task, variant, cache_dir, seed=seed, stream=True)
    write(f"{task.name} [{variant}]: {len(data.public_files())} data file(s) in {data.public}; answers in {data.hidden}")
    return data


def downloads_dir(cache_dir: Path, task: TaskSpec) -> Path:
    """Where a task's full recipes keep what they download; outlives re-preparation, so it resumes."""
    return cache_dir / "downloads" / task.name


def _prepare(task: TaskSpec, variant: str, entry: Path, fingerprint: str, seed: int, stream: bool) -> None:
    staging = entry.with_name(f".{variant}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "public").mkdir(parents=True)
    (staging / "hidden").mkdir()
    ref = task.data[variant].prepare
    arguments = {**task.recipe_arguments(variant), "public": staging / "public", "hidden": staging / "hidden",
                 "seed": seed}
    network = task.data[variant].requires.network
    if network:
        arguments["downloads"] = downloads_dir(entry.parent.parent, task)
        arguments["downloads"].mkdir(parents=True, exist_ok=True)
    result = call_task_function(task.assets, ref, arguments, timeout=DOWNLOAD_TIMEOUT if network else PREPARE_TIMEOUT,
                                stream=stream)
    if result.error or result.invalid:
        shutil.rmtree(staging, ignore_errors=True)
        raise DataError(f"preparing the '{variant}' data of task '{task.name}' with {ref} failed:\n"
                        f"{_for_the_user(result.error or result.invalid)}")
    for path in (staging / "public").rglob("*"):
        if path.is_file():
            path.chmod(0o444)
    for path in (staging / "hidden").rglob("*"):
        if path.is_file():
            path.chmod(0o444)
    shutil.rmtree(entry, ignore_errors=True)
    os.replace(staging, entry)  # renaming the folder leaves its files' stat as it is
    manifest = {"format": MANIFEST_FORMAT, "fingerprint": fingerprint, "files": _file_stamps(entry)}
    (entry / MANIFEST).write_text(json.dumps(manifest, indent=1))

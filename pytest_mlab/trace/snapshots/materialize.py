"""Materialising a snapshot: its tree recreated in a folder, from hard links into the store or
copies. Graders are given regular files only (:meth:`SnapshotStore.materialize_regular`): a grader
must never follow a link the agent made."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Callable

from pytest_mlab.errors import TraceError
from pytest_mlab.trace.snapshots.blobs import BlobStore, entry_digest
from pytest_mlab.trace.snapshots.manifests import recorded_mode


def materialize(manifest: dict[str, Any], snapshot_id: str, dest: Path | str, blobs: BlobStore,
                link_for: Callable[[str], bool], *, symlinks: bool) -> list[str]:
    """Recreate the checked ``manifest`` in ``dest``; returns the symlinks left out (none when
    ``symlinks`` is true). Each directory is created once; nothing is synced (the copy is
    scratch, the store is the record)."""
    skipped: list[str] = []
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise TraceError(
            f"cannot materialize snapshot {snapshot_id} into {dest}: "
            "it exists and is not an empty directory"
        )
    dest.mkdir(parents=True, exist_ok=True)
    made: set[str] = {""}
    for rel in manifest["dirs"]:
        _make_parents(dest, rel + "/", made)
    for rel, entry in sorted(manifest["files"].items()):
        _make_parents(dest, rel, made)
        target = dest / rel
        if "symlink" in entry:
            if symlinks:
                os.symlink(entry["symlink"], target)
            else:
                skipped.append(rel)
        else:
            _place_blob(blobs, snapshot_id, rel, entry, target, link_for(rel))
    return skipped


def _place_blob(blobs: BlobStore, snapshot_id: str, rel: str, entry: dict[str, Any], target: Path,
                link: bool) -> None:
    """Put a file at ``target``: a hard link if allowed and the modes agree, else a copy."""
    digest = entry_digest(entry)
    blob = blobs.path(digest)
    try:
        st = blob.stat()
        if st.st_size != entry["size"]:
            raise blobs.cut_short(digest, rel, snapshot_id)
        if link and recorded_mode(st.st_mode) == entry["mode"]:
            try:
                os.link(blob, target)
                return
            except OSError:
                pass  # another device or no hard links: copy instead
        shutil.copyfile(blob, target)
    except FileNotFoundError:
        if blob.exists():
            raise
        raise blobs.missing(digest, rel, snapshot_id) from None
    os.chmod(target, entry["mode"])


def _make_parents(dest: Path, rel: str, made: set[str]) -> None:
    """Create the folders above ``rel`` in ``dest`` unless this materialisation already did."""
    parent = rel.rpartition("/")[0]
    if parent not in made:
        (dest / parent).mkdir(parents=True, exist_ok=True)
        while parent not in made:
            made.add(parent)
            parent = parent.rpartition("/")[0]

"""Refusing a manifest that could write outside the folder it is materialised in, or name a blob
outside the store: a manifest on disk is read as untrusted input."""

from __future__ import annotations

import re
from typing import Any, Callable

from pytest_mlab.errors import TraceError
from pytest_mlab.trace.snapshots.blobs import DIGEST_KEY, OLD_DIGEST_KEY

_DIGEST_RE = re.compile(r"[0-9a-f]{64}")  # BLAKE3's or, in format 1, sha256's


def check_manifest(snapshot_id: str, manifest: Any) -> set[str]:
    """Refuse a manifest that could write outside ``dest`` or name a blob outside the store;
    returns the folders its files lie in, for checking the deltas built on it."""
    bad = _corrupt(snapshot_id)
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise bad("no 'files' mapping")
    _check_dirs(manifest, bad)
    files: dict[str, Any] = manifest["files"]
    folders: set[str] = set()
    for rel, entry in files.items():
        _check_file(rel, entry, files, folders, bad)
    return folders


def check_delta(snapshot_id: str, manifest: dict[str, Any], base: dict[str, Any], changed: dict[str, Any]) -> set[str]:
    """The same check for a delta applied to a checked base, at the cost of the delta's own
    entries: only a path the delta sets can break the rules. A path that was a folder in the
    base (it may still hold files) gets the whole check."""
    bad = _corrupt(snapshot_id)
    _check_dirs(manifest, bad)
    files: dict[str, Any] = manifest["files"]
    if any(rel in base["folders"] and rel not in base["files"] for rel in changed):
        return check_manifest(snapshot_id, manifest)
    folders = set(base["folders"])  # may keep folders the delta emptied: that only adds caution
    for rel, entry in changed.items():
        _check_file(rel, entry, files, folders, bad)
    return folders


def _check_file(rel: Any, entry: Any, files: dict[str, Any], folders: set[str], bad: Callable[[str], TraceError]) -> None:
    """One entry: a safe path, a valid entry, and no file or link above it."""
    if not _safe_relpath(rel):
        raise bad(f"unsafe path {rel!r}")
    _check_entry(rel, entry, bad)
    parent = rel.rpartition("/")[0]
    while parent and parent not in folders:
        if parent in files:
            raise bad(f"{rel!r} lies below the file or link {parent!r}")
        folders.add(parent)
        parent = parent.rpartition("/")[0]
    if parent and parent in files:
        raise bad(f"{rel!r} lies below the file or link {parent!r}")


def _check_dirs(manifest: dict[str, Any], bad: Callable[[str], TraceError]) -> None:
    if not isinstance(manifest.get("dirs"), list):
        raise bad("no 'dirs' list")
    for rel in manifest["dirs"]:
        if not _safe_relpath(rel):
            raise bad(f"unsafe path {rel!r}")


def _corrupt(snapshot_id: str) -> Callable[[str], TraceError]:
    return lambda why: TraceError(f"snapshot manifest {snapshot_id} is corrupt: {why}")


def _check_entry(rel: str, entry: Any, bad: Any) -> None:
    if not isinstance(entry, dict):
        raise bad(f"entry for {rel!r} is not an object")
    if "symlink" in entry:
        if not isinstance(entry["symlink"], str):
            raise bad(f"link target of {rel!r} is not a string")
        return
    keys = [key for key in (DIGEST_KEY, OLD_DIGEST_KEY) if key in entry]
    if len(keys) != 1 or not isinstance(entry[keys[0]], str) or not _DIGEST_RE.fullmatch(entry[keys[0]]):
        raise bad(f"entry for {rel!r} has no valid {DIGEST_KEY} digest")
    if entry.get("mode") not in (0o644, 0o755):
        raise bad(f"entry for {rel!r} has mode {entry.get('mode')!r}")


def _safe_relpath(rel: Any) -> bool:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or "\0" in rel:
        return False
    return all(part not in ("", ".", "..") for part in rel.split("/"))

"""Manifests: ``manifests/<snapshot_id>.json``, one per distinct workspace state.

A manifest maps each relative path to ``{"blake3", "size", "mode"}`` for a regular file (format 1,
written before BLAKE3, named the digest ``"sha256"``; such manifests are still read) or
``{"symlink": target}`` for a symbolic link, and lists empty directories. Its id is the hash of
its canonical JSON, so identical steps share one manifest and the whole store is deduplicated.

On disk, a manifest is usually stored as a delta against the one written before it by the same
store (``{"base": id, "set": {changed entries}, "unset": [removed paths], "dirs": [...]}``), so a
step that changes one file of a 10,000-file workspace costs one entry, not 10,000. Every
``MAX_CHAIN``-th manifest is stored whole, bounding the work to read any one of them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

from pytest_mlab.errors import TraceError
from pytest_mlab.trace.snapshots.disk import TMP_PREFIX, unlink_quietly
from pytest_mlab.trace.snapshots.manifest_checks import check_delta, check_manifest

FORMAT = 2  # 2: blobs named by BLAKE3; 1: by sha256
MAX_CHAIN = 32  # deltas between two whole manifests
_READ_CACHE_SIZE = 8  # manifests kept once read back
_ID_RE = re.compile(r"[0-9a-f]{16}")

Entries = dict[str, dict[str, Any]]  # relative path -> manifest entry


def recorded_mode(st_mode: int) -> int:
    """The mode a manifest keeps: only the exec bit matters, 0o755 or 0o644."""
    return 0o755 if st_mode & 0o111 else 0o644


def empty_dirs(dirs: set[str], files: dict[str, Any]) -> list[str]:
    """Directories with nothing recorded below them (the others are recreated implicitly)."""
    ancestors: set[str] = set()
    for path in (*files, *dirs):
        parent = path.rpartition("/")[0]
        while parent and parent not in ancestors:
            ancestors.add(parent)
            parent = parent.rpartition("/")[0]
    return sorted(dirs - ancestors)


def changes(old: Entries, new: Entries) -> dict[str, list[str]]:
    """Paths added, removed and changed (content, mode or link target) from ``old`` to ``new``."""
    return {
        "added": sorted(new.keys() - old.keys()),
        "removed": sorted(old.keys() - new.keys()),
        "changed": sorted(p for p in old.keys() & new.keys() if old[p] != new[p]),
    }


class ManifestStore:
    """The manifests of the snapshot store at ``root``: written as deltas, read back whole."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = root / "manifests"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.renames = 0  # manifests this instance put in place
        self._previous: tuple[str, Entries, int] | None = None  # id, files, chain length
        self._read_cache: OrderedDict[str, dict[str, Any]] = OrderedDict()  # manifests read back

    def path(self, snapshot_id: str) -> Path:
        if not isinstance(snapshot_id, str) or not _ID_RE.fullmatch(snapshot_id):
            raise TraceError(f"{snapshot_id!r} is not a snapshot id (16 lowercase hex digits)")
        return self.folder / f"{snapshot_id}.json"

    # ------------------------------------------------------------------ writing

    def write(self, files: Entries, dirs: list[str]) -> tuple[str, int]:
        """Store the manifest under the hash of its canonical JSON; returns (id, bytes added)."""
        snapshot_id = hashlib.sha256(_canonical({"format": FORMAT, "files": files, "dirs": dirs})).hexdigest()[:16]
        final = self.path(snapshot_id)
        if final.exists():
            self._previous = (snapshot_id, files, self._chain_length(snapshot_id))
            return snapshot_id, 0
        stored, chain = self._stored_form(files, dirs)
        data = _canonical(stored)
        fd, tmp_name = tempfile.mkstemp(prefix=TMP_PREFIX, dir=self.folder)
        try:
            with open(fd, "wb") as out:
                out.write(data)
            os.replace(tmp_name, final)
            self.renames += 1
        finally:
            unlink_quietly(Path(tmp_name))
        self._previous = (snapshot_id, files, chain)
        return snapshot_id, len(data)

    def _stored_form(self, files: Entries, dirs: list[str]) -> tuple[dict[str, Any], int]:
        """A delta against the previous manifest while the chain is short, else the whole manifest."""
        if self._previous is None or self._previous[2] >= MAX_CHAIN:
            return {"format": FORMAT, "files": files, "dirs": dirs}, 0
        base_id, base_files, chain = self._previous
        changed = {rel: entry for rel, entry in files.items() if base_files.get(rel) != entry}
        removed = sorted(rel for rel in base_files if rel not in files)
        return {"format": FORMAT, "base": base_id, "set": changed, "unset": removed, "dirs": dirs}, chain + 1

    def _chain_length(self, snapshot_id: str) -> int:
        """How many deltas lead to this stored manifest from a whole one."""
        length = 0
        stored = self._read_stored(snapshot_id)
        while "base" in stored:
            length += 1
            if length > MAX_CHAIN + 1:
                raise TraceError(f"snapshot manifest {snapshot_id} is corrupt: its delta chain does not end")
            stored = self._read_stored(stored["base"])
        return length

    # ------------------------------------------------------------------ reading

    def load(self, snapshot_id: str, depth: int = 0) -> dict[str, Any]:
        """A checked manifest, shared with the read cache (callers must not change it). A delta
        whose base is cached costs one copy of the base plus a check of its own entries."""
        cached = self._read_cache.get(snapshot_id)
        if cached is not None:
            self._read_cache.move_to_end(snapshot_id)
            return cached
        if depth > MAX_CHAIN + 1:
            raise TraceError(f"snapshot manifest {snapshot_id} is corrupt: its delta chain does not end")
        stored = self._read_stored(snapshot_id)
        if "base" in stored:
            if not isinstance(stored.get("set"), dict) or not isinstance(stored.get("unset"), list):
                raise TraceError(f"snapshot manifest {snapshot_id} is corrupt: a delta lacks 'set' or 'unset'")
            base = self.load(stored["base"], depth + 1)
            files = dict(base["files"])
            for rel in stored["unset"]:
                files.pop(rel, None)
            files.update(stored["set"])
            manifest = {"format": stored.get("format"), "files": files, "dirs": stored.get("dirs")}
            manifest["folders"] = check_delta(snapshot_id, manifest, base, stored["set"])
        else:
            manifest = {"format": stored.get("format"), "files": stored.get("files"), "dirs": stored.get("dirs")}
            manifest["folders"] = check_manifest(snapshot_id, manifest)
        if len(self._read_cache) >= _READ_CACHE_SIZE:
            self._read_cache.popitem(last=False)
        self._read_cache[snapshot_id] = manifest
        return manifest

    def _read_stored(self, snapshot_id: str) -> dict[str, Any]:
        """The manifest file as stored: whole, or a delta."""
        path = self.path(snapshot_id)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise TraceError(f"no snapshot {snapshot_id!r} in the store at {self.root}") from None
        try:
            stored = json.loads(data)
        except ValueError as exc:
            raise TraceError(f"snapshot manifest {path} is corrupt: {exc}") from None
        if not isinstance(stored, dict):
            raise TraceError(f"snapshot manifest {path} is corrupt: not an object")
        return stored


def _canonical(value: Any) -> bytes:
    # ensure_ascii keeps undecodable file names (surrogate escapes) representable
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return text.encode("ascii")

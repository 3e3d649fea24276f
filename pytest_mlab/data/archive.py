"""Fetch an archive that holds a task folder, verify it, and unpack it inside its own folder only.

The archive is downloaded by :func:`pytest_mlab.data.fetch.download` (resumable, and named only
once its SHA-256 matches), so nothing is ever unpacked from a file that does not match. Unpacking
admits regular files and folders only: a member whose path is absolute or climbs out with '..'
(zip or tar slip), and any link or device, stops it before a single file is written. What is
unpacked gets its final name only when all of it is there, so a folder found under that name is whole.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Callable

from pytest_mlab.data.fetch import download
from pytest_mlab.errors import DataError

Member = tuple[PurePosixPath, bool, Callable[[], IO[bytes]] | None]  # path, is a folder, opener of a file's bytes


def fetch_folder(url: str, sha256: str, downloads: Path, *, mismatch_advice: str | None = None) -> Path:
    """The archive at ``url``, verified against ``sha256`` and unpacked under ``downloads``; a
    second call finds it there and touches neither the network nor the archive. ``mismatch_advice``:
    what a checksum mismatch's message tells the user to do (see :func:`download`)."""
    downloads = Path(downloads)
    target = downloads / f"unpacked-{sha256[:16]}"
    if not target.is_dir():
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]) or "archive"
        archive = download(url, downloads / f"{sha256[:16]}-{name}", sha256=sha256, mismatch_advice=mismatch_advice)
        unpack(archive, target)
    return target


def unpack(archive: Path, target: Path) -> None:
    """Unpack a .tar.gz/.tgz (any tar) or .zip archive into ``target``, refusing anything that is
    not a regular file or folder inside it (DataError naming the member; nothing is left behind)."""
    staging = target.with_name(target.name + ".partial")
    try:
        with _open(archive) as handle:
            members = list(_zip_members(handle) if isinstance(handle, zipfile.ZipFile) else _tar_members(handle))
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(parents=True)
            for path, folder, opener in members:
                _write(staging.joinpath(*path.parts), folder, opener)
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile, tarfile.TarError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise DataError(f"unpacking {archive.name} failed ({type(exc).__name__}: {exc}); nothing was unpacked. "
                        f"The archive matches its checksum, so it is broken at its source: check the url") from None
    os.replace(staging, target)


def _open(archive: Path) -> zipfile.ZipFile | tarfile.TarFile:
    if zipfile.is_zipfile(archive):
        return zipfile.ZipFile(archive)
    if tarfile.is_tarfile(archive):
        return tarfile.open(archive, "r:*")
    raise DataError(f"{archive.name} is neither a tar nor a zip archive; the url must give a .tar.gz, .tgz or "
                    f".zip file")


def _zip_members(bundle: zipfile.ZipFile) -> Iterator[Member]:
    for info in bundle.infolist():
        if stat.S_ISLNK(info.external_attr >> 16):
            _refuse(bundle.filename, info.filename, "a symbolic link")
        path = _safe_path(bundle.filename, info.filename)
        if path is not None:
            yield path, info.is_dir(), None if info.is_dir() else (lambda info=info: bundle.open(info))


def _tar_members(bundle: tarfile.TarFile) -> Iterator[Member]:
    for info in bundle.getmembers():
        if not (info.isdir() or info.isfile()):
            kind = "a symbolic link" if info.issym() else "a hard link" if info.islnk() else "a device or pipe"
            _refuse(bundle.name, info.name, kind)
        path = _safe_path(bundle.name, info.name)
        if path is not None:
            yield path, info.isdir(), None if info.isdir() else (lambda info=info: bundle.extractfile(info))


def _safe_path(archive: str | None, name: str) -> PurePosixPath | None:
    """The member's path inside the target, or None for the archive's own top ('./')."""
    if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        _refuse(archive, name, "an absolute path")
    parts = [part for part in re.split(r"[/\\]", name) if part not in ("", ".")]
    if ".." in parts:
        _refuse(archive, name, "a path that climbs out of the folder with '..'")
    return PurePosixPath(*parts) if parts else None


def _refuse(archive: str | None, member: str, why: str) -> None:
    raise DataError(f"refused to unpack {Path(archive or 'the archive').name}: its member '{member}' is {why}; "
                    f"an archive of a task folder may hold regular files and folders only. Nothing was unpacked")


def _write(dest: Path, folder: bool, opener: Callable[[], IO[bytes]] | None) -> None:
    if folder:
        dest.mkdir(parents=True, exist_ok=True)
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    with opener() as source, open(dest, "wb") as out:
        shutil.copyfileobj(source, out)

"""Read-only data on remote docker hosts, sent once per host and content.

What the runner links from the data cache goes to each host once per content: a named volume
``mlab-data-<digest>`` holding the files, filled under a lock so concurrent workers send it once,
and mounted read-only at /mlab/data in every container of that host; the workspace holds symbolic
links to it. Data volumes carry the session's id and are removed when no container uses them and
their session is over (``pytest-mlab clean``, the next session, the session's end).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.archive import member
from pytest_mlab.sandbox.docker.conventions import DATA_LEASE, LABEL, LEASE_LABEL, OWNER_LABEL
from pytest_mlab.sandbox.docker.hosts import DockerHost, host_lock, session
from pytest_mlab.sandbox.owner import owner_gone, owner_here, owner_label

DATA_MOUNT = "/mlab/data"
DATA_VOLUME_PREFIX = "mlab-data-"
DATA_LABEL = "pytest-mlab.data"  # the content digest
SESSION_LABEL = "pytest-mlab.session"
COMPLETE = ".mlab-complete"  # written last into a data volume: it was filled to the end


def ensure_data_volume(client: Any, host: DockerHost, image: str, files: dict[str, Path]) -> tuple[str, int]:
    """The name of the volume holding ``files`` on ``host`` (``client``'s daemon), and the bytes
    sent to fill it (0 when it was there already). ``image`` serves to reach the volume."""
    from docker.errors import DockerException, NotFound

    digest = data_digest(files)
    name = f"{DATA_VOLUME_PREFIX}{digest[:32]}"
    with host_lock(host, name):
        try:
            volume = client.volumes.get(name)
            if volume.attrs.get("Labels", {}).get(DATA_LABEL) == digest and _filled(client, image, name):
                return name, 0
            volume.remove(force=True)  # made by docker itself, or half filled by a killed worker
        except NotFound:
            pass
        except DockerException as exc:
            raise SandboxError(f"cannot check the data volume {name} on {host.name}: {exc}") from exc
        labels = {LABEL: "1", DATA_LABEL: digest, SESSION_LABEL: session(), OWNER_LABEL: owner_label(),
                  LEASE_LABEL: lease_until(DATA_LEASE)}
        try:
            client.volumes.create(name, labels=labels)
            sent = _fill(client, image, name, files)
        except DockerException as exc:
            raise SandboxError(f"cannot send the task's data to {host.name}: {exc}") from exc
    return name, sent


def _filled(client: Any, image: str, volume: str) -> bool:
    from docker.errors import NotFound

    with _volume_holder(client, image, volume) as holder:
        try:
            holder.get_archive(f"{DATA_MOUNT}/{COMPLETE}")
        except NotFound:
            return False
    return True


def _fill(client: Any, image: str, volume: str, files: dict[str, Path]) -> int:
    """Send the files, then the mark that says the volume is complete; the bytes sent."""
    sent = 0
    with _volume_holder(client, image, volume) as holder, tempfile.TemporaryFile() as archive:
        with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
            folders: set[str] = set()
            for rel, source in sorted(files.items()):
                for parent in reversed(PurePosixPath(rel).parents[:-1] if "/" in rel else []):
                    if parent.as_posix() not in folders:
                        folders.add(parent.as_posix())
                        tar.addfile(member(parent.as_posix(), tarfile.DIRTYPE, 0o755, uid=0))
                with open(source, "rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    tar.addfile(member(rel, tarfile.REGTYPE, 0o444, source.stat().st_mtime, size=size, uid=0), handle)
                    sent += size
        archive.seek(0)
        if not holder.put_archive(DATA_MOUNT, archive):
            raise SandboxError("the daemon refused the data archive")
        mark = io.BytesIO()
        with tarfile.open(fileobj=mark, mode="w") as tar:
            tar.addfile(member(COMPLETE, tarfile.REGTYPE, 0o444, size=0, uid=0), io.BytesIO())
        holder.put_archive(DATA_MOUNT, mark.getvalue())
    return sent


class _volume_holder:
    """A container that is never started, only there to reach a volume through the archive API."""

    def __init__(self, client: Any, image: str, volume: str) -> None:
        self.client, self.image, self.volume, self.container = client, image, volume, None

    def __enter__(self) -> Any:
        from docker.types import Mount

        self.container = self.client.containers.create(
            self.image, ["true"], network_mode="none", labels={LABEL: "1", OWNER_LABEL: owner_label()},
            mounts=[Mount(DATA_MOUNT, self.volume, type="volume")])
        return self.container

    def __exit__(self, *exc: object) -> None:
        try:
            self.container.remove(force=True)
        except Exception:  # swept with the other leftovers
            pass


@functools.lru_cache(maxsize=4096)
def _file_digest(path: str, size: int, mtime_ns: int, inode: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def data_digest(files: dict[str, Path]) -> str:
    """The digest of the data's content and layout: the same data gets the same volume on a host,
    whichever task or worker sends it. Each file is hashed once per process."""
    digest = hashlib.sha256()
    for rel, source in sorted(files.items()):
        info = source.stat()
        digest.update(f"{rel}\0{_file_digest(str(source), info.st_size, info.st_mtime_ns, info.st_ino)}\0".encode())
    return digest.hexdigest()


def remove_data_volumes(client: Any, *, everything: bool = False) -> list[str]:
    """Remove the data volumes no container uses that belong to this session (its controller
    sweeps at its start and end) or whose creator is gone (any not in use with ``everything``):
    one in use, or of another session still running here, stays."""
    from docker.errors import APIError, NotFound

    removed = []
    for volume in client.volumes.list(filters={"label": DATA_LABEL}):
        labels = volume.attrs.get("Labels") or {}
        mine = bool(session()) and labels.get(SESSION_LABEL) == session()
        if not (everything or mine or abandoned(labels)):
            continue
        try:
            volume.remove()
        except NotFound:
            continue
        except APIError:  # a container uses it: not a leftover
            continue
        removed.append(volume.name)
    return removed


def lease_until(seconds: float) -> str:
    """The lease label's value for something its owner uses for ``seconds`` from now."""
    return str(int(time.time() + seconds))


def abandoned(labels: dict[str, str]) -> bool:
    """Whether what carries ``labels`` was left by a creator that is gone: on the creator's own
    machine, by its pid; made by another machine, by its lease having run out (that machine may
    be dead, and its pids mean nothing here). No lease label: never judged from elsewhere."""
    owner = labels.get(OWNER_LABEL, "")
    if owner_here(owner):
        return owner_gone(owner)
    try:
        return float(labels.get(LEASE_LABEL, "")) < time.time()
    except ValueError:
        return False

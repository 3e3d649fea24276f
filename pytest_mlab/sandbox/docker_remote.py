"""The docker backend on a daemon that shares no file system with the harness (``tcp://``, ``ssh://``).

Nothing is bind-mounted. The harness keeps its host folder of the workspace (file actions,
snapshots and grading read it, exactly as with a local daemon); the container holds its own copy
at the same path, on an anonymous volume mounted at /tmp (removed with the container), owned by
the sandbox user. Around every command the two are brought level through the archive API:

- **in**: what the harness changed in its folder since the last command (by lstat stamp), one
  tar through ``put_archive``; what it deleted, deleted there.
- **out**: after everything the command started is killed, a listing made in the container by
  the image's own Python (isolated mode, as the sandbox user) names what changed since the last
  listing (size, mtime, ctime, inode: ctime cannot be set back by the agent); those files come
  out through ``get_archive``, one at a time when few, else one archive of the whole workspace,
  and the harness writes them into its folder without following links and without writing
  through a hard-linked data file. A listing that fails (an unreadable folder) falls back to the
  whole archive, which the daemon reads with full rights.

Read-only data (what the runner links from the data cache) is sent to each host once per content:
a named volume ``mlab-data-<digest>`` holding the files, filled under a lock so concurrent workers
send it once, and mounted read-only at /mlab/data in every container of that host; the workspace
holds symbolic links to it. Data volumes carry the session's id and are removed when no container
uses them and their session is over (``pytest-mlab clean``, the next session, the session's end).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import posixpath
import shlex
import stat
import tarfile
import tempfile
from pathlib import Path, PurePosixPath
from typing import IO, Any, Iterable

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker import (_KILL_ALL, _READ_CPU, HOME, LABEL, OWNER_LABEL, SANDBOX_UID, DockerSandbox,
                                        _stats_cpu_seconds, cgroup_cpu_seconds)
from pytest_mlab.sandbox.docker_hosts import host_lock, session
from pytest_mlab.sandbox.docker_image import RUNTIME_IMAGE, build_task_image, uses_host_runtime
from pytest_mlab.sandbox.owner import owner_label
from pytest_mlab.sandbox.workspace import remove_tree

DATA_MOUNT = "/mlab/data"
DATA_VOLUME_PREFIX = "mlab-data-"
DATA_LABEL = "pytest-mlab.data"  # the content digest
SESSION_LABEL = "pytest-mlab.session"
COMPLETE = ".mlab-complete"  # written last into a data volume: it was filled to the end
FEW = 32  # changed files fetched one by one; more and the whole workspace comes in one archive
SPOOL = 64 << 20  # archives up to this size are built in memory, larger ones in a temp file
_LISTER = r"""
import json, os, stat, sys
root, out, errors = sys.argv[1], {}, []
def walk(folder, prefix):
    try:
        names = os.listdir(folder)
    except OSError:
        errors.append(prefix or "."); return
    for name in names:
        path, rel = os.path.join(folder, name), prefix + name
        try:
            info = os.lstat(path)
        except OSError:
            errors.append(rel); continue
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            out[rel] = ["d", 0, 0, 0, info.st_ino, ""]
            walk(path, rel + "/")
        elif stat.S_ISLNK(mode):
            out[rel] = ["l", 0, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, os.readlink(path)]
        else:
            out[rel] = ["f" if stat.S_ISREG(mode) else "o", info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                        info.st_ino, ""]
walk(root, "")
cpu = ""
for name in ("cpuacct/cpuacct.usage", "cpu,cpuacct/cpuacct.usage", "cpu.stat"):
    try:
        cpu += open("/sys/fs/cgroup/" + name).read()
    except OSError:
        pass
json.dump({"entries": out, "errors": errors, "cpu": cpu}, sys.stdout)
"""


class RemoteDockerSandbox(DockerSandbox):
    """A docker sandbox whose daemon may be on another machine: the workspace moves by archive.

    Every ``docker exec`` costs a round trip, so the CPU counter is read by scripts that run
    anyway: the kill after a command (its "after") and the listing after that (the next
    command's "before": nothing runs in the container in between, archives are the daemon's work).
    """

    kill_script = f"{_KILL_ALL}; {_READ_CPU}"

    def __init__(self, workspace: Path | None = None, **kwargs: Any) -> None:
        self._data: dict[str, Path] = {}  # workspace path -> cache file, for what the runner links
        self._pushed: dict[str, tuple[int, ...]] = {}  # host folder's lstat stamps as the container has them
        self._listing: dict[str, list[Any]] = {}  # the container's entries at the last listing
        self._data_volume: str | None = None
        self._cpu_before: float | None = None  # the counter as the last listing left it
        self.data_sent = 0  # bytes of data this sandbox sent to its host (0 when the volume was there)
        super().__init__(workspace, **kwargs)

    # -- image and container -------------------------------------------------------------------

    def _image(self, image: str | None) -> str:
        if image is None and self.options.image is None and self.options.dockerfile is not None:
            image = build_task_image(self._client, self.options.dockerfile, host=self.host)
        chosen = image or self.options.image or RUNTIME_IMAGE
        _require_image(self._client, chosen, self.host.name)
        if uses_host_runtime(self._client, chosen):
            raise SandboxError(
                f"the image {chosen!r} borrows the harness's own Python through bind mounts, which the remote "
                f"docker host {self.host.name} cannot have; build the task's image FROM {RUNTIME_IMAGE} or another "
                "image with python3 and /bin/sh (see docs/docker-images.md)")
        return chosen

    def _mounts(self) -> list[Any]:
        from docker.types import Mount

        mounts = [Mount("/tmp", None, type="volume")]  # anonymous: removed with the container
        if self._data_volume:
            mounts.append(Mount(DATA_MOUNT, self._data_volume, type="volume", read_only=True))
        return mounts

    def _tmpfs(self, memory: int) -> dict[str, str]:
        return {}  # /tmp is the workspace's volume: on the host's disk, not in the memory limit

    def _ensure_container(self) -> Any:
        if self._container is None and self._data:
            self._data_volume, self.data_sent = ensure_data_volume(self, self._data)
        return super()._ensure_container()

    def _before_start(self, container: Any) -> None:
        """The workspace and HOME folders, the sandbox user's, in the container's /tmp volume."""
        folders = [str(self.workspace), HOME]
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for folder in folders:
                tar.addfile(_member(PurePosixPath(folder).relative_to("/tmp").as_posix(), tarfile.DIRTYPE, 0o755))
        if not container.put_archive("/tmp", archive.getvalue()):
            raise SandboxError(f"cannot create the workspace in a container on {self.host.name}")

    def _hand_over(self) -> None:
        """Ownership travels in the archives' headers; the host folder stays the harness's."""

    # -- files -----------------------------------------------------------------------------------

    def copy_in(self, host_path: Path, path: str, *, link: bool = False) -> None:
        super().copy_in(host_path, path, link=link)
        if not link or self._container is not None:
            return  # data linked after the container started travels as a plain copy
        host = Path(host_path)
        target = self.files.resolve(path)
        sources = ([(host, target)] if host.is_file() else
                   [(file, target / file.relative_to(host)) for file in host.rglob("*") if file.is_file()])
        for source, placed in sources:
            if placed.is_dir():
                placed = placed / source.name
            self._data[placed.relative_to(self.workspace).as_posix()] = source

    def _is_data(self, relative: str, info: os.stat_result) -> bool:
        """Whether the host folder still holds the data file the runner put there (its own inode,
        or an unchanged copy where it could not link): then the container gets a link to the volume."""
        source = self._data.get(relative)
        if source is None or self._data_volume is None:
            return False
        try:
            original = source.stat()
        except OSError:
            return False
        return (info.st_ino == original.st_ino and info.st_dev == original.st_dev) or \
            (info.st_size == original.st_size and info.st_mtime_ns == original.st_mtime_ns)

    # -- commands --------------------------------------------------------------------------------

    def _exec(self, argv: list[str], **kwargs: Any) -> Any:
        container = self._ensure_container()
        self._push(container)
        result = super()._exec(argv, **kwargs)
        self._pull(container)
        return result

    def _cpu_seconds(self, container: Any) -> float | None:
        if self._kill_report is not None:  # right after a command: the kill script's reading
            report, self._kill_report = self._kill_report, None
            seconds = cgroup_cpu_seconds(report.decode(errors="replace"))
            if seconds is not None:
                return seconds
        elif self._cpu_before is not None:
            seconds, self._cpu_before = self._cpu_before, None
            return seconds
        seconds = cgroup_cpu_seconds((self._run_as_user(_READ_CPU) or b"").decode(errors="replace"))
        return seconds if seconds is not None else _stats_cpu_seconds(container)

    def _push(self, container: Any) -> None:
        """Send what the harness changed in its folder since the container last saw it."""
        current = _host_stamps(self.workspace)
        changed = sorted(rel for rel, stamp in current.items() if self._pushed.get(rel) != stamp)
        gone = sorted(rel for rel in self._pushed if rel not in current)
        if gone:
            self._cpu_before = None  # the removal ran in the container: read the counter again
            self._remove_in_container(container, gone)
        if changed:
            with tempfile.SpooledTemporaryFile(SPOOL) as archive:
                with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    for rel in changed:
                        self._add_to_archive(tar, rel)
                archive.seek(0)
                if not container.put_archive(str(self.workspace), archive):
                    raise SandboxError(f"cannot send the workspace to the container on {self.host.name}")
        self._pushed = current

    def _add_to_archive(self, tar: tarfile.TarFile, rel: str) -> None:
        path = os.path.join(self.workspace, rel)
        try:
            info = os.lstat(path)
        except OSError:
            return
        if stat.S_ISDIR(info.st_mode):
            tar.addfile(_member(rel, tarfile.DIRTYPE, info.st_mode & 0o777 | 0o700, info.st_mtime))
        elif stat.S_ISLNK(info.st_mode):
            tar.addfile(_member(rel, tarfile.SYMTYPE, 0o777, info.st_mtime, link=os.readlink(path)))
        elif stat.S_ISREG(info.st_mode):
            if self._is_data(rel, info):
                tar.addfile(_member(rel, tarfile.SYMTYPE, 0o777, info.st_mtime, link=f"{DATA_MOUNT}/{rel}"))
                return
            try:
                handle = open(path, "rb", opener=_no_follow)
            except OSError:
                return
            with handle:
                size = os.fstat(handle.fileno()).st_size
                tar.addfile(_member(rel, tarfile.REGTYPE, info.st_mode & 0o777 | 0o600, info.st_mtime, size=size),
                            handle)

    def _remove_in_container(self, container: Any, paths: list[str]) -> None:
        for start in range(0, len(paths), 200):
            script = "rm -rf -- " + " ".join(shlex.quote(f"{self.workspace}/{rel}") for rel in paths[start:start + 200])
            if self._run_as_user(script) is None:
                raise SandboxError(f"cannot delete files in the container on {self.host.name}")

    def _pull(self, container: Any) -> None:
        """Bring the host folder level with the container after a command."""
        listing = self._list_container(container)
        if listing is None:
            self._pull_everything(container)
            return
        changed = [rel for rel, entry in listing.items() if self._listing.get(rel) != entry or rel not in self._pushed]
        gone = [rel for rel in self._pushed if rel not in listing]
        self._delete_on_host(gone)
        files = [rel for rel in changed if listing[rel][0] == "f"]
        for rel in sorted(changed):
            kind, target = listing[rel][0], listing[rel][5]
            if kind == "d":
                self._place_folder(rel)
            elif kind == "l":
                self._place_link(rel, target)
            elif kind == "o":
                self._delete_on_host([rel])
        if len(files) > FEW:
            self._fetch(container, ".", set(files))
        else:
            for rel in files:
                self._fetch(container, rel, {rel})
        self._listing = listing
        self._pushed = _host_stamps(self.workspace)

    def _pull_everything(self, container: Any) -> None:
        """No listing: take the whole workspace, and drop what the archive does not hold."""
        seen = self._fetch(container, ".", None)
        self._delete_on_host([rel for rel in _host_stamps(self.workspace) if rel not in seen])
        self._listing = {}
        self._pushed = _host_stamps(self.workspace)

    def _list_container(self, container: Any) -> dict[str, list[Any]] | None:
        from docker.errors import DockerException

        try:
            result = container.exec_run([self.python, "-I", "-c", _LISTER, str(self.workspace)], user=self.user,
                                        workdir="/", demux=True, environment={"PATH": "/usr/local/bin:/usr/bin:/bin"})
        except DockerException:
            return None
        stdout = result.output[0] if result.output else None
        if result.exit_code != 0 or not stdout:
            return None
        try:
            report = json.loads(stdout)
        except ValueError:
            return None
        self._cpu_before = cgroup_cpu_seconds(str(report.get("cpu", "")))
        return None if report.get("errors") else report.get("entries")

    def _fetch(self, container: Any, rel: str, wanted: set[str] | None) -> set[str]:
        """Write the archive of ``rel`` into the host folder (only ``wanted`` files; None: all); the
        paths the archive held, workspace-relative."""
        from docker.errors import NotFound

        source = str(self.workspace) if rel == "." else f"{self.workspace}/{rel}"
        try:
            stream, _stat = container.get_archive(source)
        except NotFound:
            return set()  # gone since the listing: the next listing says so
        base = posixpath.dirname(rel) if rel != "." else None
        seen: set[str] = set()
        with tarfile.open(fileobj=_ChunkReader(stream), mode="r|") as tar:
            for member in tar:
                name = _relative(member.name, base)
                if name is None:
                    continue
                seen.add(name)
                if wanted is not None and name not in wanted:
                    continue
                if member.isdir():
                    self._place_folder(name)
                elif member.issym():
                    self._place_link(name, member.linkname)
                elif member.isfile():
                    self._place_file(name, tar.extractfile(member), member)
                elif member.islnk():  # a second name of a file the archive held earlier: a copy here
                    self._place_copy(name, _relative(member.linkname, base), member)
        return seen

    # -- the host folder ---------------------------------------------------------------------------

    def _host_parent(self, rel: str) -> str | None:
        """The host path of ``rel`` when every folder above it is a real folder inside the
        workspace (never through a link the container made); else None."""
        root = str(self.workspace)
        path = os.path.join(root, rel)
        parent = os.path.dirname(path)
        if os.path.realpath(parent) != os.path.normpath(parent) or not self.files.inside(parent):
            return None
        return path

    def _clear(self, path: str) -> None:
        if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
            os.unlink(path)
        elif os.path.isdir(path):
            remove_tree(Path(path))

    def _place_folder(self, rel: str) -> None:
        path = self._host_parent(rel)
        if path is None or (os.path.isdir(path) and not os.path.islink(path)):
            return
        self._clear(path)
        os.makedirs(path, exist_ok=True)

    def _place_link(self, rel: str, target: str) -> None:
        path = self._host_parent(rel)
        if path is None:
            return
        if target == f"{DATA_MOUNT}/{rel}" and rel in self._data:
            try:
                if self._is_data(rel, os.lstat(path)):
                    return  # the container's view of the data file the host folder holds
            except OSError:
                pass
            self._clear(path)
            self.files.copy_in(self._data[rel], rel, link=True)
            return
        if os.path.islink(path) and os.readlink(path) == target:
            return
        self._clear(path)
        os.symlink(target, path)

    def _place_file(self, rel: str, content: IO[bytes] | None, member: tarfile.TarInfo) -> None:
        path = self._host_parent(rel)
        if path is None or content is None:
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.lexists(path):
            self._clear(path)  # a new inode: never written through a link to the data cache
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, member.mode & 0o777 | 0o600)
        with os.fdopen(fd, "wb") as handle:
            while chunk := content.read(1 << 20):
                handle.write(chunk)
        os.utime(path, (member.mtime, member.mtime), follow_symlinks=False)

    def _place_copy(self, rel: str, source: str | None, member: tarfile.TarInfo) -> None:
        origin = self._host_parent(source) if source else None
        if origin is None or not os.path.isfile(origin) or os.path.islink(origin):
            return
        with open(origin, "rb", opener=_no_follow) as content:
            self._place_file(rel, content, member)

    def _delete_on_host(self, paths: Iterable[str]) -> None:
        for rel in sorted(paths, key=lambda p: -p.count("/")):
            path = self._host_parent(rel)
            if path is not None and os.path.lexists(path):
                self._clear(path)


# -------------------------------------------------------------------------------------------------
# Data volumes


def ensure_data_volume(sandbox: RemoteDockerSandbox, files: dict[str, Path]) -> tuple[str, int]:
    """The name of the volume holding ``files`` on the sandbox's host, and the bytes sent to fill
    it (0 when it was there already)."""
    from docker.errors import DockerException, NotFound

    client, digest = sandbox._client, data_digest(files)
    name = f"{DATA_VOLUME_PREFIX}{digest[:32]}"
    with host_lock(sandbox.host, name):
        try:
            volume = client.volumes.get(name)
            if volume.attrs.get("Labels", {}).get(DATA_LABEL) == digest and _filled(client, sandbox.image, name):
                return name, 0
            volume.remove(force=True)  # made by docker itself, or half filled by a killed worker
        except NotFound:
            pass
        except DockerException as exc:
            raise SandboxError(f"cannot check the data volume {name} on {sandbox.host.name}: {exc}") from exc
        labels = {LABEL: "1", DATA_LABEL: digest, SESSION_LABEL: session(), OWNER_LABEL: owner_label()}
        try:
            client.volumes.create(name, labels=labels)
            sent = _fill(client, sandbox.image, name, files)
        except DockerException as exc:
            raise SandboxError(f"cannot send the task's data to {sandbox.host.name}: {exc}") from exc
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
                        tar.addfile(_member(parent.as_posix(), tarfile.DIRTYPE, 0o755, uid=0))
                with open(source, "rb") as handle:
                    size = os.fstat(handle.fileno()).st_size
                    tar.addfile(_member(rel, tarfile.REGTYPE, 0o444, source.stat().st_mtime, size=size, uid=0), handle)
                    sent += size
        archive.seek(0)
        if not holder.put_archive(DATA_MOUNT, archive):
            raise SandboxError("the daemon refused the data archive")
        mark = io.BytesIO()
        with tarfile.open(fileobj=mark, mode="w") as tar:
            tar.addfile(_member(COMPLETE, tarfile.REGTYPE, 0o444, size=0, uid=0), io.BytesIO())
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

    from pytest_mlab.sandbox.owner import owner_gone

    removed = []
    for volume in client.volumes.list(filters={"label": DATA_LABEL}):
        labels = volume.attrs.get("Labels") or {}
        mine = bool(session()) and labels.get(SESSION_LABEL) == session()
        if not (everything or mine or owner_gone(labels.get(OWNER_LABEL, ""))):
            continue
        try:
            volume.remove()
        except NotFound:
            continue
        except APIError:  # a container uses it: not a leftover
            continue
        removed.append(volume.name)
    return removed


# -------------------------------------------------------------------------------------------------
# Small pieces


def _member(name: str, kind: bytes, mode: int, mtime: float = 0, *, link: str = "", size: int = 0,
            uid: int = SANDBOX_UID) -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type, member.mode, member.mtime, member.linkname, member.size = kind, mode, int(mtime), link, size
    member.uid = member.gid = uid
    return member


def _host_stamps(root: Path) -> dict[str, tuple[int, ...]]:
    """Every entry of the host folder (links not followed) with what changes when it is rewritten."""
    stamps = {}
    for folder, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            stamps[rel] = (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    return stamps


def _relative(name: str, base: str | None) -> str | None:
    """A member's workspace path: the archive names the fetched folder or file first; nothing may
    climb out."""
    parts = PurePosixPath(name).parts
    if not parts or parts[0] in ("/", "..") or ".." in parts:
        return None
    inner = parts[1:]  # below the fetched folder, or the fetched file's own name
    if base is None:
        return "/".join(inner) if inner else None
    rel = "/".join(parts)
    return posixpath.join(base, rel) if base else rel


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW)


def _require_image(client: Any, image: str, host: str) -> None:
    from docker.errors import APIError, ImageNotFound

    try:
        client.images.get(image)
    except ImageNotFound:
        hint = (f"import one made from this machine's Python (pytest-mlab image tarball runtime.tar; "
                f"pytest-mlab image import runtime.tar --hosts {host}) or build docker/runtime.Dockerfile there"
                if image == RUNTIME_IMAGE else f"build or load it there (docker -H {host} load, or pull)")
        raise SandboxError(f"the docker image {image!r} is not on the host {host}: {hint}; see docs/docker-images.md") \
            from None
    except APIError as exc:
        raise SandboxError(f"cannot look up the docker image {image!r} on {host}: {exc.explanation or exc}") from exc


class _ChunkReader(io.RawIOBase):
    """A file over the chunks ``get_archive`` yields, so tarfile streams without holding it all."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks, self._left = iter(chunks), b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._left))
        buffer[:size], self._left = self._left[:size], self._left[size:]
        return size

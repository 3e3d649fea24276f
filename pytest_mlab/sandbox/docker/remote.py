"""The docker backend on a daemon that shares no file system with the harness (``tcp://``, ``ssh://``).

Nothing is bind-mounted. The harness keeps its host folder of the workspace (file actions,
snapshots and grading read it, exactly as with a local daemon); the container holds its own copy
at the same path, on an anonymous volume mounted at /tmp (removed with the container), owned by
the sandbox user. Around every command the two are brought level through the archive API
(:mod:`.archive`):

- **in**: what the harness changed in its folder since the last command (by lstat stamp), one
  tar through ``put_archive``; what it deleted, deleted there.
- **out**: after everything the command started is killed, a listing made in the container by
  the image's own Python (isolated mode, as the sandbox user) names what changed since the last
  listing (size, mtime, ctime, inode: ctime cannot be set back by the agent); those files come
  out through ``get_archive``, one at a time when few, else one archive of the whole workspace,
  and the harness writes them into its folder without following links and without writing
  through a hard-linked data file. A listing that fails (an unreadable folder) falls back to the
  whole archive, which the daemon reads with full rights.

Read-only data (what the runner links from the data cache) is sent to each host once per content
and mounted read-only at /mlab/data (:mod:`.data_volumes`); the workspace holds symbolic links to it.
"""

from __future__ import annotations

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
from pytest_mlab.sandbox.docker.archive import ChunkReader, host_stamps, member, no_follow, workspace_path
from pytest_mlab.sandbox.docker.container import KILL_ALL, ContainerSandbox
from pytest_mlab.sandbox.docker.conventions import HOME
from pytest_mlab.sandbox.docker.cpu import READ_CPU, cgroup_cpu_seconds, stats_cpu_seconds
from pytest_mlab.sandbox.docker.data_volumes import DATA_MOUNT, ensure_data_volume
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE, build_task_image, require_image, uses_host_runtime
from pytest_mlab.sandbox.workspace import remove_tree

FEW = 32  # changed files fetched one by one; more and the whole workspace comes in one archive
SPOOL = 64 << 20  # archives up to this size are built in memory, larger ones in a temp file
_LISTER = r"""
import json, os, stat, sys
root, depth_bound, entry_bound = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out, errors, stack = {}, [], [(root, "", 0)]
while stack:  # an explicit stack, never recursion: a chain thousands deep is listed like any other
    folder, prefix, depth = stack.pop()
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        errors.append(prefix or "."); continue
    for name in names:
        path, rel = os.path.join(folder, name), prefix + name
        if len(out) >= entry_bound:
            errors.append("more entries than " + str(entry_bound)); stack = []; break
        try:
            info = os.lstat(path)
        except OSError:
            errors.append(rel); continue
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            out[rel] = ["d", 0, 0, 0, info.st_ino, ""]
            if depth >= depth_bound:
                errors.append(rel)
            else:
                stack.append((path, rel + "/", depth + 1))
        elif stat.S_ISLNK(mode):
            out[rel] = ["l", 0, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, os.readlink(path)]
        else:
            out[rel] = ["f" if stat.S_ISREG(mode) else "o", info.st_size, info.st_mtime_ns, info.st_ctime_ns,
                        info.st_ino, ""]
cpu = ""
for name in ("cpuacct/cpuacct.usage", "cpu,cpuacct/cpuacct.usage", "cpu.stat"):
    try:
        cpu += open("/sys/fs/cgroup/" + name).read()
    except OSError:
        pass
json.dump({"entries": out, "errors": errors, "cpu": cpu}, sys.stdout)
"""


class RemoteDockerSandbox(ContainerSandbox):
    """A docker sandbox whose daemon may be on another machine: the workspace moves by archive.

    Every ``docker exec`` costs a round trip, so the CPU counter is read by scripts that run
    anyway: the kill after a command (its "after") and the listing after that (the next
    command's "before": nothing runs in the container in between, archives are the daemon's work).
    """

    kill_script = f"{KILL_ALL}; {READ_CPU}"

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
        require_image(self._client, chosen, self.host.name)
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
            self._data_volume, self.data_sent = ensure_data_volume(self._client, self.host, self.image, self._data)
        return super()._ensure_container()

    def _before_start(self, container: Any) -> None:
        """The workspace and HOME folders, the sandbox user's, in the container's /tmp volume."""
        folders = [str(self.workspace), HOME]
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for folder in folders:
                tar.addfile(member(PurePosixPath(folder).relative_to("/tmp").as_posix(), tarfile.DIRTYPE, 0o755))
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
        seconds = cgroup_cpu_seconds((self._run_as_user(READ_CPU) or b"").decode(errors="replace"))
        return seconds if seconds is not None else stats_cpu_seconds(container)

    def _push(self, container: Any) -> None:
        """Send what the harness changed in its folder since the container last saw it."""
        current = host_stamps(self.workspace, self.options.bound)
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
            tar.addfile(member(rel, tarfile.DIRTYPE, info.st_mode & 0o777 | 0o700, info.st_mtime))
        elif stat.S_ISLNK(info.st_mode):
            tar.addfile(member(rel, tarfile.SYMTYPE, 0o777, info.st_mtime, link=os.readlink(path)))
        elif stat.S_ISREG(info.st_mode):
            if self._is_data(rel, info):
                tar.addfile(member(rel, tarfile.SYMTYPE, 0o777, info.st_mtime, link=f"{DATA_MOUNT}/{rel}"))
                return
            try:
                handle = open(path, "rb", opener=no_follow)
            except OSError:
                return
            with handle:
                size = os.fstat(handle.fileno()).st_size
                tar.addfile(member(rel, tarfile.REGTYPE, info.st_mode & 0o777 | 0o600, info.st_mtime, size=size),
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
        self._pushed = host_stamps(self.workspace, self.options.bound)

    def _pull_everything(self, container: Any) -> None:
        """No listing: take the whole workspace, and drop what the archive does not hold."""
        seen = self._fetch(container, ".", None)
        self._delete_on_host([rel for rel in host_stamps(self.workspace, self.options.bound) if rel not in seen])
        self._listing = {}
        self._pushed = host_stamps(self.workspace, self.options.bound)

    def _list_container(self, container: Any) -> dict[str, list[Any]] | None:
        from docker.errors import DockerException

        try:
            bound = self.options.bound  # beyond it: an error, so the whole workspace comes back for the snapshot to judge
            argv = [self.python, "-I", "-c", _LISTER, str(self.workspace), str(bound.depth), str(bound.entries)]
            result = container.exec_run(argv, user=self.user,
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
        with tarfile.open(fileobj=ChunkReader(stream), mode="r|") as tar:
            for member in tar:
                name = workspace_path(member.name, base)
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
                    self._place_copy(name, workspace_path(member.linkname, base), member)
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
        with open(origin, "rb", opener=no_follow) as content:
            self._place_file(rel, content, member)

    def _delete_on_host(self, paths: Iterable[str]) -> None:
        for rel in sorted(paths, key=lambda p: -p.count("/")):
            path = self._host_parent(rel)
            if path is not None and os.path.lexists(path):
                self._clear(path)

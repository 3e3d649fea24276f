"""The docker backend on a daemon that shares no file system with the harness (``tcp://``, ``ssh://``).

Nothing is bind-mounted. The harness keeps its host folder of the workspace (file actions,
snapshots and grading read it, exactly as with a local daemon); the container holds its own copy
at the same path, on an anonymous volume mounted at /tmp (removed with the container, created with
``nocopy``), owned by the sandbox user. Around every command the two are brought level, and only
what changed moves, whatever the number of files:

- **in**: what the harness changed in its folder since the last command (by lstat stamp), one
  tar through ``put_archive``; what it deleted, deleted there.
- **out**: after everything the command started is killed, a listing made in the container
  (:mod:`.listing`) names what changed since the last one; those files come out through the
  container's own Python (:mod:`.fetch`), holes left out, and the harness writes them into its
  folder without following links and without writing through a hard-linked data file. The
  listing's disk use is checked against the task's ``limits.disk`` before a byte is written. A
  folder the sandbox user cannot read is named in the command's output and kept as it was.

Names travel as bytes (hex in our scripts' arguments, surrogate escapes in JSON and tar), so a
name that is not UTF-8 moves like any other. Each call of a step gives up after
:data:`~.hosts.CALL_TIMEOUT` without a byte from the host, so a host that hangs is ``host lost``
within a minute.

Read-only data (what the runner links from the data cache) is sent to each host once per content
and mounted read-only at /mlab/data (:mod:`.data_volumes`); the workspace holds symbolic links to it.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
import tempfile
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import IO, Any, Iterable, Iterator

from pytest_mlab.errors import SandboxError, WorkspaceOverLimits
from pytest_mlab.sandbox.docker.archive import host_stamps, member, no_follow, put_archive
from pytest_mlab.sandbox.docker.container import KILL_ALL, ContainerSandbox
from pytest_mlab.sandbox.docker.conventions import HOME
from pytest_mlab.sandbox.docker.cpu import READ_CPU, cgroup_cpu_seconds, stats_cpu_seconds
from pytest_mlab.sandbox.docker.data_volumes import DATA_MOUNT, ensure_data_volume
from pytest_mlab.sandbox.docker.fetch import Fetched, batches, hex_name, packer_argv, read_packed, write_sparse
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE, build_task_image, require_image, uses_host_runtime
from pytest_mlab.sandbox.docker.listing import KIND, TARGET, lister_argv, parse_listing
from pytest_mlab.sandbox.workspace import remove_tree
from pytest_mlab.spec.models import DEFAULT_DISK

SPOOL = 64 << 20  # archives up to this size are built in memory, larger ones in a temp file
_REMOVER = r"""
import os, shutil, sys
root = os.fsencode(sys.argv[1])
for name in [bytes.fromhex(part) for part in sys.argv[2].split(",") if part]:
    path = os.path.join(root, name)
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)
    except OSError:  # a folder the agent made read-only: the next listing shows what stayed
        pass
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
        self._notes: list[str] = []  # lines for the current command's output: what could not be brought back
        self._unreadable: set[str] = set()  # folders the last listing could not read (reported once)
        self._sent: dict[str, str] = {}  # SHA-256 of the files sent before the current command
        self._over_limits = ""  # the limit the container's workspace went past (a snapshot raises it)
        super().__init__(workspace, **kwargs)
        self._client = self.host.step_client()  # image and data went through the patient client

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

        # anonymous: removed with the container; nocopy: the image's /tmp is not copied into each one
        mounts = [Mount("/tmp", None, type="volume", no_copy=True)]
        if self._data_volume:
            mounts.append(Mount(DATA_MOUNT, self._data_volume, type="volume", read_only=True))
        return mounts

    def _tmpfs(self, memory: int) -> dict[str, str]:
        return {}  # /tmp is the workspace's volume: on the host's disk, not in the memory limit

    def _ensure_container(self) -> Any:
        if self._container is None and self._data:
            self._data_volume, self.data_sent = ensure_data_volume(self.host.client(), self.host, self.image,
                                                                   self._data)
        return super()._ensure_container()

    def _before_start(self, container: Any) -> None:
        """The workspace and HOME folders, the sandbox user's, in the container's /tmp volume."""
        folders = [str(self.workspace), HOME]
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for folder in folders:
                tar.addfile(member(PurePosixPath(folder).relative_to("/tmp").as_posix(), tarfile.DIRTYPE, 0o755))
        if not put_archive(self._client, container.id, "/tmp", archive.getvalue(), len(archive.getvalue())):
            raise SandboxError(f"cannot create the workspace in a container on {self.host.name}")

    def _started(self) -> None:
        """With ``nocopy`` the volume's root is as docker makes it (0755, root's), and the archive
        API never changes the mode of the folder it unpacks into: /tmp is made 1777 here, by its owner."""
        super()._started()
        result = self._container.exec_run([self.python, "-I", "-c", "import os; os.chmod('/tmp', 0o1777)"],
                                          user="0:0", workdir="/", environment={"PATH": "/usr/local/bin:/usr/bin:/bin"})
        if result.exit_code != 0:
            raise SandboxError(f"cannot open /tmp to the sandbox user in a container on {self.host.name}: "
                               f"{(result.output or b'').decode(errors='replace')[-500:]}")

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
        notes, self._notes = self._notes, []
        return replace(result, stderr=result.stderr + "".join(f"\n[{note}]\n" for note in notes)) if notes else result

    def sync_out(self) -> None:
        """The host folder is level after every command; a workspace the last listing found beyond
        its limits fails the snapshot here, as a walk of it would on the other backends."""
        if self._over_limits:
            raise WorkspaceOverLimits(self._over_limits)

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
            self._remove_in_container(gone)
        if changed:
            with tempfile.SpooledTemporaryFile(SPOOL) as archive:
                with tarfile.open(fileobj=archive, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    for rel in changed:
                        self._add_to_archive(tar, rel)
                size = archive.tell()
                archive.seek(0)
                if not put_archive(self._client, container.id, str(self.workspace), archive, size):
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
                sent = _Hashing(handle)  # the digest of the bytes sent, read once
                tar.addfile(member(rel, tarfile.REGTYPE, info.st_mode & 0o777 | 0o600, info.st_mtime, size=size),
                            sent)
                self._sent[rel] = sent.digest.hexdigest()

    def _remove_in_container(self, paths: list[str]) -> None:
        """Delete ``paths`` there; names travel as hex, so any bytes the kernel allows are fine."""
        for batch in batches(paths):
            argv = [self.python, "-I", "-c", _REMOVER, str(self.workspace), ",".join(hex_name(rel) for rel in batch)]
            self._script_output(argv)

    def _script_output(self, argv: list[str]) -> bytes:
        """What a script of ours printed, run in the container as the sandbox user; a
        SandboxError naming what failed when it did not run to its end."""
        return b"".join(self._script_stream(argv))

    def _script_stream(self, argv: list[str]) -> Iterator[bytes]:
        """The standard output of a script of ours, as it comes; its errors as in ``_script_output``."""
        from docker.errors import DockerException

        api = self._client.api
        errors = []
        try:
            exec_id = api.exec_create(self._container.id, argv, user=self.user, workdir="/",
                                      environment={"PATH": "/usr/local/bin:/usr/bin:/bin"})["Id"]
            for out, err in api.exec_start(exec_id, stream=True, demux=True):
                if err and sum(map(len, errors)) < 4096:
                    errors.append(err)
                if out:
                    yield out
            code = api.exec_inspect(exec_id).get("ExitCode")
        except DockerException as exc:
            raise SandboxError(f"the harness's own script could not run in the container on {self.host.name}: "
                               f"{getattr(exc, 'explanation', None) or exc}") from exc
        if code != 0:
            raise SandboxError(f"the harness's own script failed in the container on {self.host.name} "
                               f"(exit {code}): {b''.join(errors).decode(errors='replace')[-1000:]}")

    def _pull(self, container: Any) -> None:
        """Bring the host folder level with the container after a command: only what changed moves."""
        argv = lister_argv(self.python, str(self.workspace), self.options.bound, self._sent)
        listing = parse_listing(self._script_output(argv), self.options.bound)
        self._sent = {}
        if listing is None:
            raise SandboxError(f"the listing of the workspace in the container on {self.host.name} printed no listing")
        self._cpu_before = cgroup_cpu_seconds(listing.cpu)
        quota = self.options.disk or DEFAULT_DISK
        if listing.over or listing.disk_use() > quota:  # the run ends at its next snapshot: nothing more moves
            self._over_limits = listing.over or (
                f"the workspace's files take more than its disk quota of {quota / (1 << 20):,.0f} MiB "
                f"(in the container on {self.host.name}); the limit is the task's limits.disk")
            return
        entries = listing.entries
        changed = [rel for rel, entry in entries.items()
                   if (self._listing.get(rel) != entry or rel not in self._pushed) and rel not in listing.same]
        self._delete_on_host(rel for rel in self._pushed if rel not in entries and not listing.hidden(rel))
        for rel in sorted(changed):
            kind, target = entries[rel][KIND], entries[rel][TARGET]
            if kind == "d":
                self._place_folder(rel)
            elif kind == "l":
                self._place_link(rel, target)
            elif kind == "o":
                self._delete_on_host([rel])
        for batch in batches(sorted(rel for rel in changed if entries[rel][KIND] == "f")):
            read_packed(self._script_stream(packer_argv(self.python, str(self.workspace), batch)), self._place_file)
        for folder, why in sorted(listing.unreadable.items()):
            if folder not in self._unreadable:
                self._notes.append(f"the sandbox user cannot read {folder!r} ({why}): what it holds is not brought "
                                   "back to the harness, and snapshots keep it as it was")
        self._unreadable = set(listing.unreadable)
        self._listing = entries
        self._pushed = host_stamps(self.workspace, self.options.bound)

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

    def _place_file(self, fetched: Fetched, body: IO[bytes]) -> None:
        """Write one fetched file as a new inode (never through a link to the data cache), its holes
        kept; a file that cannot be written is named in the command's output, and the rest goes on."""
        path = self._host_parent(fetched.name) if not fetched.error else None
        if path is None:
            if fetched.error:
                self._notes.append(f"EnvError: {fetched.name!r} could not be brought back from the sandbox "
                                   f"({fetched.error})")
            return
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if os.path.lexists(path):
                self._clear(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, fetched.mode & 0o777 | 0o600)
            try:
                write_sparse(fd, fetched, body)
            finally:
                os.close(fd)
            os.utime(path, (fetched.mtime, fetched.mtime), follow_symlinks=False)
        except OSError as exc:
            self._notes.append(f"EnvError: {fetched.name!r} could not be written to the harness's copy of the "
                               f"workspace ({exc.strerror or exc}); it is left out of snapshots")

    def _delete_on_host(self, paths: Iterable[str]) -> None:
        for rel in sorted(paths, key=lambda p: -p.count("/")):
            path = self._host_parent(rel)
            if path is not None and os.path.lexists(path):
                self._clear(path)


class _Hashing:
    """A file read through for tarfile, hashing what it reads: a file sent to the container is
    read once, and its recorded digest is that of the very bytes sent."""

    def __init__(self, handle: IO[bytes]) -> None:
        self._handle, self.digest = handle, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self._handle.read(size)
        self.digest.update(data)
        return data

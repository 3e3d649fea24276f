"""A root filesystem made from this machine's own Python, for docker hosts that reach no registry.

A remote docker host cannot mount the harness's interpreter, so it runs ``pytest-mlab/runtime:1``
(see :mod:`.image`). Where the host cannot pull a base image, the image is this machine's
interpreter in a tar, imported with ``docker import``: the interpreter and its installation at the
same absolute paths as here (so it finds its standard library as it does here), the few programs
the sandbox runs (``/bin/sh``, ``cat``, ``mkdir``, ``rm``, ``ls``, ``env``, and ``sleep``, the
container's main process), the shared libraries all of them load (found with ``ldd``, and kept at
the paths ldd found them, with the links on the way), this machine's loader cache, and the bare
files and folders a container needs. The host needs the same CPU architecture, nothing else.

Left out of the standard library, as no sandboxed script needs them: every package named
``test`` (the regression suite, the largest part, and the tests of ``ctypes`` and ``unittest``),
``idlelib``, ``tkinter`` with its ``_tkinter`` extension (which would pull in Tcl/Tk and X11),
``turtledemo``, and the static ``libpython*.a`` in the ``config-*`` folder (only for linking an
embedded interpreter). ``site-packages`` is left out unless asked for: a stdlib-only image is
about 100 MB, one with this machine's packages as large as they are.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import os
import re
import shutil
import site
import stat
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, Iterable

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.conventions import HOME, SANDBOX_UID
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE

#: Names left out of the standard library wherever they are (packages, modules, files).
EXCLUDED_STDLIB = ("test", "idlelib", "tkinter", "turtledemo", "_tkinter*", "libpython*.a")
SITE_PACKAGES = ("site-packages", "dist-packages")
#: What the sandbox runs besides Python: its scripts' shell and tools, and the container's main process.
TOOLS = ("sh", "cat", "mkdir", "rm", "ls", "env", "sleep")
TOOL_DIRS = ("/bin", "/usr/bin")
PYTHON_LINK = "/usr/local/bin/python3"
EMPTY_DIRS = {"/tmp": 0o1777, "/proc": 0o755, "/dev": 0o755, "/sys": 0o755}
#: The loader's cache, so that libraries found here through ld.so.conf are found there too.
LOADER_CACHE = "/etc/ld.so.cache"
IMPORT_CHANGES = ["LABEL pytest-mlab.image=runtime", "ENV PATH=/usr/local/bin:/usr/bin:/bin"]
LDD_BATCH = 200  # files per ldd call
_MAX_LINKS = 40  # symbolic links followed for one path, as the kernel's limit
_LDD_FOUND = re.compile(r"=>\s+(/\S+)\s+\(0x[0-9a-f]+\)")
_LDD_LOADER = re.compile(r"^\s+(/\S+)\s+\(0x[0-9a-f]+\)")
_LDD_MISSING = re.compile(r"^\s+(\S+)\s+=>\s+not found")
_SHARED_OBJECT = re.compile(r".+\.so(\.[0-9.]+)?$")


@dataclass(frozen=True)
class Entry:
    """One member of the image: a host file copied, a link, a folder, or a file written here."""

    kind: str  # "file", "dir" or "link"
    mode: int
    source: str = ""  # the host file a "file" is copied from ("" when ``data`` holds it)
    target: str = ""  # a link's target, as the host has it
    data: bytes = b""
    mtime: int = 0


@dataclass
class TarballSummary:
    """What a runtime tarball holds, for the command's one-line report."""

    path: Path
    files: int = 0
    links: int = 0
    directories: int = 0
    content_bytes: int = 0  # the files' bytes before any compression
    size: int = 0  # the tarball's own size on disk
    libraries: int = 0  # shared libraries the binaries load, from ldd
    unresolved: tuple[str, ...] = ()  # libraries ldd did not find here: the image lacks them too

    def line(self) -> str:
        missing = f"; {len(self.unresolved)} library(ies) not found here: {', '.join(self.unresolved)}" \
            if self.unresolved else ""
        return (f"{self.path}: {self.files} files, {self.links} links, {self.directories} folders, "
                f"{self.content_bytes / 1e6:.1f} MB of content ({self.libraries} shared libraries), "
                f"{self.size / 1e6:.1f} MB on disk{missing}")


@dataclass
class Layout:
    """The image's members by absolute path; host paths keep their links, so /lib -> usr/lib on a
    merged-/usr system stays a link and what was reached through it resolves in the image too."""

    entries: dict[str, Entry] = field(default_factory=dict)
    libraries: set[str] = field(default_factory=set)
    unresolved: set[str] = field(default_factory=set)

    def add_host_path(self, path: str, _links: int = 0) -> str:
        """Add a host path with each link on the way to it; returns where it really is."""
        if _links > _MAX_LINKS:
            raise SandboxError(f"too many symbolic links on the way to {path}; fix the link loop on this machine")
        parts = PurePosixPath(os.path.abspath(path)).parts[1:]
        current = "/"
        for index, part in enumerate(parts):
            candidate = os.path.join(current, part)
            if os.path.islink(candidate):
                target = os.readlink(candidate)
                self._put(candidate, Entry("link", 0o777, target=target, mtime=int(os.lstat(candidate).st_mtime)))
                resolved = os.path.normpath(os.path.join(current, target))
                return self.add_host_path(os.path.join(resolved, *parts[index + 1:]), _links + 1)
            current = candidate
        self._add_real(current)
        return current

    def add_tree(self, root: str, skip: Iterable[str] = ()) -> list[str]:
        """Add a folder and everything in it but the names matching a ``skip`` pattern, at any
        depth; returns the shared objects found, whose libraries the image needs too."""
        real = self.add_host_path(root)
        patterns = tuple(skip)
        shared: list[str] = []
        for folder, dirs, files in os.walk(real):
            dirs[:] = sorted(name for name in dirs
                             if not _matches(name, patterns) and not self._link_in_tree(folder, name))
            for name in sorted(files):
                path = os.path.join(folder, name)
                if _matches(name, patterns) or self._link_in_tree(folder, name):
                    continue
                self._add_real(path)
                if _SHARED_OBJECT.match(name):
                    shared.append(path)
            for name in dirs:
                self._add_real(os.path.join(folder, name))
        return shared

    def add_libraries_of(self, binaries: Iterable[str]) -> None:
        """The shared-library closure of ``binaries``, as ldd resolves it here, dynamic loader included.
        A name ldd does not find but the image holds (a wheel's bundled library, which its package
        loads first) is not missing."""
        found, missing = ldd_closure(binaries)
        for library in sorted(found - self.libraries):
            self.libraries.add(library)
            self.add_host_path(library)
        held = {os.path.basename(path) for path, entry in self.entries.items() if entry.kind != "dir"}
        self.unresolved |= missing - held

    def add_dir(self, path: str, mode: int = 0o755) -> None:
        self._put(path, Entry("dir", mode))

    def add_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._put(path, Entry("file", mode, data=data))

    def add_link(self, path: str, target: str) -> None:
        self._put(path, Entry("link", 0o777, target=target))

    def _link_in_tree(self, folder: str, name: str) -> bool:
        """A link inside a tree: kept as a link, and what it points to kept too (a file in full, a
        folder as an empty one: a tree is never pulled in through a link)."""
        path = os.path.join(folder, name)
        if not os.path.islink(path):
            return False
        self.add_host_path(path)
        return True

    def _add_real(self, path: str) -> None:
        """A path with no link on the way to it (or a link itself, when the path is one); a link
        that points nowhere stays a link to nowhere."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode):
            self.add_host_path(path)
        elif stat.S_ISDIR(info.st_mode):
            self._put(path, Entry("dir", 0o755, mtime=int(info.st_mtime)))
        elif stat.S_ISREG(info.st_mode):
            # readable by the sandbox user whatever the host says; kept executable where it was
            mode = 0o755 if info.st_mode & 0o111 else 0o644
            self._put(path, Entry("file", mode, source=path, mtime=int(info.st_mtime)))
        # sockets, FIFOs and devices are not part of an installation: left out

    def _put(self, path: str, entry: Entry) -> None:
        """Add one member, and the folders above it that are not there yet."""
        if path == "/":
            return
        parent = os.path.dirname(path)
        above = self.entries.get(parent)
        if above is None:
            self._put(parent, Entry("dir", 0o755))
        elif above.kind == "link":
            raise SandboxError(f"{path} is reached through the link {parent}; add it with add_host_path")
        self.entries[path] = entry


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def parse_ldd(text: str) -> tuple[set[str], set[str]]:
    """The libraries ldd's output names (the loader included; the kernel's vdso, which is no file,
    left out), and the names it could not find. Output for several files at once is fine."""
    found: set[str] = set()
    missing: set[str] = set()
    for line in text.splitlines():
        if match := _LDD_MISSING.match(line):
            missing.add(match.group(1))
        elif match := _LDD_FOUND.search(line) or _LDD_LOADER.match(line):
            found.add(match.group(1))
    return found, missing


def ldd_closure(binaries: Iterable[str]) -> tuple[set[str], set[str]]:
    """Every library ``binaries`` load, transitively (ldd lists the whole closure), and the names
    ldd could not find. A file that is not dynamically linked adds nothing."""
    ldd = shutil.which("ldd")
    if ldd is None:
        raise SandboxError("ldd is not installed, and the runtime tarball needs it to find the libraries "
                           "Python loads; install it (apt-get install libc-bin)")
    files = sorted(set(binaries))
    found: set[str] = set()
    missing: set[str] = set()
    for start in range(0, len(files), LDD_BATCH):
        # a file that is not dynamic makes ldd exit 1; the others' lines are still right
        result = subprocess.run([ldd, *files[start:start + LDD_BATCH]], capture_output=True, text=True,
                                errors="replace", env={**os.environ, "LC_ALL": "C"}, check=False)
        batch_found, batch_missing = parse_ldd(result.stdout)
        found |= batch_found
        missing |= batch_missing
    return found, missing


def interpreter() -> str:
    """The running interpreter's real file."""
    return os.path.realpath(sys.executable)


def stdlib_dirs() -> list[str]:
    paths = sysconfig.get_paths()
    return sorted({os.path.realpath(paths[name]) for name in ("stdlib", "platstdlib")})


def site_packages_dirs() -> list[str]:
    """The installation's own package folders (the user's are not part of it)."""
    if sys.prefix != sys.base_prefix:
        raise SandboxError(f"the runtime tarball holds the interpreter's own installation, but this Python runs "
                           f"in the virtual environment {sys.prefix}, whose packages the image's python3 would "
                           "not see; run the command with the base interpreter, or leave out --site-packages")
    paths = sysconfig.get_paths()
    candidates = {paths["purelib"], paths["platlib"], *site.getsitepackages()}
    return sorted({os.path.realpath(path) for path in candidates if os.path.isdir(path)})


def libpython_files() -> list[str]:
    """The shared libpython (the interpreter may also load it through ldd; listed in case it does not)."""
    folder = sysconfig.get_config_var("LIBDIR") or os.path.join(sys.base_prefix, "lib")
    return sorted(str(path) for path in Path(folder).glob("libpython*.so*"))


def tools() -> list[str]:
    """The host's own programs the sandbox needs, at each place this machine has them (so /bin/sh
    is there also where /bin is a link to usr/bin)."""
    found = []
    for name in TOOLS:
        places = [os.path.join(folder, name) for folder in TOOL_DIRS if os.path.lexists(os.path.join(folder, name))]
        if not places:
            raise SandboxError(f"{name} is in neither of {', '.join(TOOL_DIRS)} on this machine, and the runtime "
                               "image needs it; install it (coreutils, dash)")
        found += places
    return found


def passwd() -> bytes:
    return (f"root:x:0:0:root:/root:/bin/sh\n"
            f"nonroot:x:{SANDBOX_UID}:{SANDBOX_UID}:nonroot:{HOME}:/bin/sh\n").encode()


def group() -> bytes:
    return f"root:x:0:\nnonroot:x:{SANDBOX_UID}:\n".encode()


def runtime_layout(*, site_packages: bool) -> Layout:
    """Every member of the runtime image, nothing written yet."""
    layout = Layout()
    python = interpreter()
    binaries = [python, *libpython_files()]
    layout.add_host_path(sys.executable)
    for library in libpython_files():
        layout.add_host_path(library)
    skip = EXCLUDED_STDLIB if site_packages else (*EXCLUDED_STDLIB, *SITE_PACKAGES)
    for folder in stdlib_dirs():
        binaries += layout.add_tree(folder, skip)
    if site_packages:
        for folder in site_packages_dirs():
            binaries += layout.add_tree(folder)
    binaries += [layout.add_host_path(tool) for tool in tools()]
    layout.add_libraries_of(binaries)
    if os.path.isfile(LOADER_CACHE):
        layout.add_host_path(LOADER_CACHE)
    layout.add_link(PYTHON_LINK, python)
    layout.add_file("/etc/passwd", passwd())
    layout.add_file("/etc/group", group())
    for path, mode in EMPTY_DIRS.items():
        layout.add_dir(path, mode)
    return layout


def write_runtime_tarball(out: Path, *, site_packages: bool) -> TarballSummary:
    """Write the runtime image's root filesystem to ``out`` (gzip-compressed when its name ends in
    .gz): members in path order, all owned by root, so the same machine writes the same tarball.
    The tarball appears whole or not at all."""
    return write_layout(runtime_layout(site_packages=site_packages), Path(out))


def write_layout(layout: Layout, out: Path) -> TarballSummary:
    summary = TarballSummary(out, libraries=len(layout.libraries), unresolved=tuple(sorted(layout.unresolved)))
    out.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
    try:
        with os.fdopen(handle, "wb") as raw:
            stream: IO[bytes] = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) \
                if out.name.endswith(".gz") else raw
            with stream, tarfile.open(fileobj=stream, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for path in sorted(layout.entries, key=lambda name: name.split("/")):
                    _write_member(tar, path, layout.entries[path], summary)
        os.chmod(partial, 0o644)  # mkstemp's 0600 would keep other users from importing it
        os.replace(partial, out)
    except BaseException:
        os.unlink(partial)
        raise
    summary.size = out.stat().st_size
    return summary


def _write_member(tar: tarfile.TarFile, path: str, entry: Entry, summary: TarballSummary) -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.mode, info.mtime = entry.mode, entry.mtime
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    if entry.kind == "dir":
        info.type = tarfile.DIRTYPE
        summary.directories += 1
        tar.addfile(info)
    elif entry.kind == "link":
        info.type, info.linkname = tarfile.SYMTYPE, entry.target
        summary.links += 1
        tar.addfile(info)
    elif entry.source:
        try:
            with open(entry.source, "rb") as source:
                info.size = os.fstat(source.fileno()).st_size
                tar.addfile(info, source)
        except OSError as exc:
            raise SandboxError(f"cannot read {entry.source} for the runtime tarball ({exc.strerror}); "
                               "run the command as a user who can read the Python installation") from exc
        summary.files += 1
        summary.content_bytes += info.size
    else:
        info.size = len(entry.data)
        tar.addfile(info, io.BytesIO(entry.data))
        summary.files += 1
        summary.content_bytes += info.size


def import_runtime_image(client: Any, tarball: Path, tag: str = RUNTIME_IMAGE, *, host: str = "") -> str:
    """Import a runtime tarball into ``client``'s daemon as ``tag`` and return the image's id. The
    file is streamed to the daemon from disk, never read into memory. ``host`` names the daemon in
    errors (default: the client's address)."""
    from docker.errors import DockerException
    from requests.exceptions import RequestException

    where = host or getattr(client.api, "base_url", "") or "the docker daemon"
    require_tarball(tarball)  # the SDK would take a missing file's name for a URL to fetch
    repository, _, version = tag.rpartition(":")
    if not repository or "/" in version:  # no tag, or a registry's port
        repository, version = tag, "latest"
    failed = "check that the daemon answers and has room for the image, and that the tarball was written whole"
    try:
        reply = client.api.import_image_from_file(str(tarball), repository=repository, tag=version,
                                                  changes=IMPORT_CHANGES)
        error = import_error(reply)
        if error is None:
            return client.images.get(tag).id
    except (DockerException, RequestException, OSError) as exc:
        error = str(getattr(exc, "explanation", None) or exc)
    raise SandboxError(f"cannot import {tarball} as {tag} on the docker host {where}: {error}; {failed}")


def require_tarball(tarball: Path) -> None:
    if not Path(tarball).is_file():
        raise SandboxError(f"the runtime tarball {tarball} does not exist; write it first "
                           f"(pytest-mlab image tarball {tarball})")


def import_error(reply: Any) -> str | None:
    """The failure among the JSON messages the daemon answers an import with (it answers 200 and
    says what went wrong in the stream), or None."""
    text = reply.decode(errors="replace") if isinstance(reply, bytes) else str(reply or "")
    decoder = json.JSONDecoder()
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return None
        try:
            message, at = decoder.raw_decode(text, at)
        except ValueError:
            return None  # not JSON: nothing to read a failure from
        if isinstance(message, dict) and message.get("error"):
            return str((message.get("errorDetail") or {}).get("message") or message["error"])

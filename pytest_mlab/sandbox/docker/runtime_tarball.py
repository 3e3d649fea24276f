"""A root filesystem made from this machine's own Python, for docker hosts that reach no registry.

A remote docker host cannot mount the harness's interpreter, so it runs ``pytest-mlab/runtime:1``
(see :mod:`.image`). Where the host cannot pull a base image, the image is this machine's
interpreter in a tar, imported with ``docker import``: the interpreter and its installation at the
same absolute paths as here (so it finds its standard library as it does here), the few programs
the sandbox runs (``/bin/sh``, ``cat``, ``mkdir``, ``rm``, ``ls``, ``env``, and ``sleep``, the
container's main process), the shared libraries all of them load (found with ``ldd``, and kept at
the paths ldd found them, with the links on the way), this machine's loader cache, and the bare
files and folders a container needs (assembled by :mod:`.rootfs`). The host needs the same CPU
architecture, nothing else.

Left out of the standard library, as no sandboxed script needs them: every package named
``test`` (the regression suite, the largest part, and the tests of ``ctypes`` and ``unittest``),
``idlelib``, ``tkinter`` with its ``_tkinter`` extension (which would pull in Tcl/Tk and X11),
``turtledemo``, and the static ``libpython*.a`` in the ``config-*`` folder (only for linking an
embedded interpreter). ``site-packages`` is left out unless asked for: a stdlib-only image is
about 100 MB, one with the packages as large as they are. The interpreter and packages are the
task runtime's (pytest_mlab/task_runtime: the locked one by default, or what --mlab-runtime /
$MLAB_TASK_RUNTIME names), never the harness's; where it is a virtual environment, the image's
python3 is made that environment (:func:`venv_files`).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pytest_mlab.errors import SandboxError
from pytest_mlab.sandbox.docker.conventions import HOME, SANDBOX_UID
from pytest_mlab.sandbox.docker.image import RUNTIME_IMAGE
from pytest_mlab.sandbox.docker.rootfs import Entry, Layout
from pytest_mlab.task_runtime.choice import task_python

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


def _installation() -> dict:
    """The task runtime's installation (the interpreter agents' scripts run with in every other
    sandbox, so remote hosts give agents the same packages), as it reports it."""
    from pytest_mlab.sandbox.host_runtime import describe

    return describe(task_python())


def interpreter() -> str:
    """The task runtime interpreter's real file."""
    return os.path.realpath(task_python())


def stdlib_dirs() -> list[str]:
    paths = _installation()["paths"]
    return sorted({os.path.realpath(paths[name]) for name in ("stdlib", "platstdlib")})


def site_packages_dirs() -> list[str]:
    """The task runtime's package folders: a virtual environment's own where it is one (the locked
    runtime is), else the interpreter's (a user's own site-packages are not part of either)."""
    found = _installation()
    candidates = {found["paths"]["purelib"], found["paths"]["platlib"], *found["site"]}
    return sorted({os.path.realpath(path) for path in candidates if os.path.isdir(path)})


def in_virtual_environment() -> bool:
    found = _installation()
    return found["prefix"] != found["base_prefix"]


def venv_files(packages: list[str]) -> tuple[dict[str, bytes], dict[str, str]]:
    """What makes the image's python3 (``/usr/local/bin/python3``) a virtual environment holding
    ``packages``, as this one is: a ``pyvenv.cfg`` beside its folder, so that Python takes
    ``/usr/local`` for its prefix and the real interpreter's folder for its home, and its
    site-packages there a link to the packages' own folder. (files, links), by image path."""
    major, minor, micro = _installation()["version"]
    version = f"{major}.{minor}"
    config = (f"home = {os.path.dirname(interpreter())}\ninclude-system-site-packages = false\n"
              f"version = {major}.{minor}.{micro}\n")
    links = {f"/usr/local/lib/python{version}/site-packages": packages[0]} if packages else {}
    return {"/usr/local/pyvenv.cfg": config.encode()}, links


def libpython_files() -> list[str]:
    """The shared libpython (the interpreter may also load it through ldd; listed in case it does not)."""
    found = _installation()
    folder = found["libdir"] or os.path.join(found["base_prefix"], "lib")
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
    layout.add_host_path(task_python())
    for library in libpython_files():
        layout.add_host_path(library)
    for folder in stdlib_dirs():  # site-packages come apart: a virtual environment's are not the interpreter's
        binaries += layout.add_tree(folder, (*EXCLUDED_STDLIB, *SITE_PACKAGES))
    if site_packages:
        packages = site_packages_dirs()
        for folder in packages:
            binaries += layout.add_tree(folder)
        if in_virtual_environment():
            files, links = venv_files(packages)
            for path, data in files.items():
                layout.add_file(path, data)
            for path, target in links.items():
                layout.add_link(path, target)
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

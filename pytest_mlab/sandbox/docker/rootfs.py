"""A root filesystem assembled from this machine's own paths, for an image that runs what runs here.

Host paths keep the links on the way to them, so a path reached through a link (``/lib ->
usr/lib`` on a merged-/usr system) resolves in the image as it does here; the shared libraries
the binaries load are found with ``ldd`` and kept at the paths ldd found them.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Iterable

from pytest_mlab.errors import SandboxError

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

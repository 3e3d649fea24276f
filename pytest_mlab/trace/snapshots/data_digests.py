"""Digests of read-only data, remembered across runs and processes without trusting the agent.

Every run links the same data files into its workspace, and hashing hundreds of MB again in each
new process was the largest cost of a step. A digest is reused only while the kernel vouches that
the content has not changed:

* Within a process, by a read **lease** (``F_SETLEASE``) on the file, taken before it is hashed:
  the kernel refuses one while anyone has the file open for writing, and breaks it as soon as
  anyone opens it for writing or truncates it, which is the only way to change its content.
  Linking, unlinking, chmod and touch leave the lease alone, so the harness's own links (which
  change the ctime) cost nothing. The kernel makes such a writer wait until the lease is given
  back or ``/proc/sys/fs/lease-break-time`` (45 s by default) passes, so the kernel is asked to
  say when it breaks one: a signal to the main thread, whose handler gives back every broken
  lease at once (a writer, the agent's script or this process itself, goes on within
  milliseconds). Leases are also given back at the end of each run (:func:`settle`).
* Across processes, by a file of entries keyed on ``(device, inode, size, mtime, ctime)``: the
  ctime cannot be set back, so any change since an entry was written, even one that restores the
  size and mtime, makes it miss and the file is hashed again. An entry is written at the end of
  a run (:func:`settle`), only while its writer holds an intact lease, with the ctime seen then,
  after its own links and a clock tick later (the racy rule of digest_cache.py). A run takes its
  lease before it links the data anywhere (:func:`vouch`), while the entry still matches. The file lives
  with the prepared data, where no sandbox mounts it; it is replaced atomically, and one that is
  corrupt, of another format, not ours or writable by others is ignored (and rewritten).

Under the local backend an agent runs with the user's rights and could write that file itself;
docs/sandboxes.md says what local does not protect. Where leases are unavailable (another
owner, a file system without them) nothing is remembered and data is hashed once per run.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import resource
import signal
import stat
import struct
import threading
import time
from collections import OrderedDict
from pathlib import Path

from pytest_mlab.trace.snapshots.blobs import hash_file
from pytest_mlab.trace.snapshots.digest_cache import RACY_WINDOW_NS
from pytest_mlab.trace.snapshots.disk import temp_path, unlink_quietly

FORMAT = "pytest-mlab data digests 2"  # 2: BLAKE3 digests (1 held sha256s)
HELD_LEASES = 65536  # open leases (one fd each) a process keeps at most, within its fd limit
FILE_ENTRIES = 65536  # entries one digests file keeps at most
_SPARE_FDS = 512  # fds left to everything else in the process
_DIGEST = re.compile(r"[0-9a-f]{64}")
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_REOPEN = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)

Key = tuple[int, int]  # st_dev, st_ino
Stamp = tuple[int, int, int]  # st_size, st_mtime_ns, st_ctime_ns


class _Held:
    """A lease this process holds on one data inode, and the digest it vouches for."""

    def __init__(self, fd: int, digest: str, size: int, mtime_ns: int) -> None:
        self.fd, self.digest, self.size, self.mtime_ns = fd, digest, size, mtime_ns

    def intact(self) -> bool:
        try:
            return fcntl.fcntl(self.fd, fcntl.F_GETLEASE) == fcntl.F_RDLCK
        except OSError:
            return False


_held: OrderedDict[Key, _Held] = OrderedDict()
_by_inode: dict[int, set[Key]] = {}  # _held's keys by inode number, for files seen through an overlay
_lock = threading.Lock()


def lease_room() -> int:
    """How many leases this process may hold: every data file of a task, so that a snapshot never
    evicts a lease it needs again (a task of 463 files thrashed a room of 256 and hashed all of
    them at every snapshot). The soft fd limit is raised toward the hard one once, as needed."""
    global _room
    if _room is None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = HELD_LEASES + _SPARE_FDS
        if soft != resource.RLIM_INFINITY and soft < wanted:
            raised = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
                soft = raised
            except (OSError, ValueError):
                pass
        _room = wanted if soft == resource.RLIM_INFINITY else max(64, soft - _SPARE_FDS)
    return min(HELD_LEASES, _room)


_room: int | None = None


def take_lease(fd: int) -> int | None:
    """A new read-only fd of the file open at ``fd``, holding a read lease; None if the kernel
    refuses one (someone has it open for writing, not our file, no leases on this file system)."""
    try:
        leased = os.open(f"/proc/self/fd/{fd}", _REOPEN)  # the same inode, a description of our own
    except OSError:
        return None
    try:
        fcntl.fcntl(leased, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        if _listening_for_breaks():
            fcntl.fcntl(leased, fcntl.F_SETSIG, _BREAK_SIGNAL)
            main = threading.main_thread().native_id
            fcntl.fcntl(leased, _F_SETOWN_EX, struct.pack("ii", _F_OWNER_TID, main))
        else:
            fcntl.fcntl(leased, fcntl.F_SETOWN, 0)  # no SIGIO (whose default kills) when it breaks
    except OSError:
        os.close(leased)
        return None
    return leased


#: The signal the kernel sends the main thread when a lease breaks (a real-time one, queued, that
#: nothing else here uses). Sent to that thread alone: a thread of this process blocked opening a
#: leased file for writing is interrupted, gives the lease back, and opens it again (PEP 475).
_BREAK_SIGNAL = signal.SIGRTMIN + 3
_F_SETOWN_EX, _F_OWNER_TID = 15, 0  # <linux/fcntl.h>: signal one thread (Python's fcntl names neither)
_listening: bool | None = None


def _listening_for_breaks() -> bool:
    """Whether breaks are signalled to :func:`_give_back_broken`: installed once, by the main
    thread (Python runs handlers there alone); until then, and where that fails, a writer waits
    for the kernel's lease-break time or the end of the run."""
    global _listening
    if _listening is None and threading.current_thread() is threading.main_thread():
        try:
            signal.signal(_BREAK_SIGNAL, _give_back_broken)
            _listening = True
        except (ValueError, OSError):
            _listening = False
    return bool(_listening)


def _give_back_broken(signum: int, frame: object) -> None:
    """Give back every lease the kernel is breaking. It touches no bookkeeping (the main thread
    may be in the middle of it, holding ``_lock``): a lease given back reads as broken, and is
    dropped at its next use."""
    for held in list(_held.values()):
        try:
            if fcntl.fcntl(held.fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK:
                fcntl.fcntl(held.fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        except OSError:
            continue


def lookup(fd: int, digests_file: Path | None) -> tuple[str | None, int | None]:
    """Take a lease on the data file open at ``fd``, then its digest if a held lease or an entry
    vouches for it. Returns ``(digest or None, leased fd or None)``; hash the file when the digest
    is None, then hand the leased fd to :func:`keep` (no lease: hash it and remember nothing)."""
    leased = take_lease(fd)
    if leased is None:
        return None, None
    st = os.fstat(leased)
    key = (st.st_dev, st.st_ino)
    with _lock:
        held = _held.get(key) or _held_elsewhere(st)
        if held is not None and held.intact() and (held.size, held.mtime_ns) == (st.st_size, st.st_mtime_ns):
            return held.digest, leased
    entry = _load(digests_file).get(key) if digests_file is not None else None
    if entry is not None and entry[0] == (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
        return entry[1], leased  # unchanged since a lease vouched for it: ctime cannot go back
    return None, leased


def vouch(paths: list[Path], digests_file: Path | None) -> None:
    """Before the harness links these data files anywhere (which moves their ctime): take a lease
    on each whose entry still matches, so this process trusts its digest from then on."""
    for path in paths:
        try:
            fd = os.open(path, _OPEN)
        except OSError:
            continue
        try:
            digest, leased = lookup(fd, digests_file)
        finally:
            os.close(fd)
        if leased is not None:
            if digest is None:
                os.close(leased)
            else:
                keep(leased, digest)


def digest_of(path: Path, digests_file: Path | None) -> str:
    """The content digest (blobs.py) of the data file at ``path``: vouched for by a lease or an entry, else hashed
    (under a lease taken first, which is kept, so later scans of this process trust it).
    Raises OSError when the file cannot be opened (missing, a symlink)."""
    st = os.lstat(path)
    if stat.S_ISREG(st.st_mode):
        known = recall(st)  # a lease held on this very inode: no need to open it again
        if known is not None:
            return known
    fd = os.open(path, _OPEN)
    try:
        digest, leased = lookup(fd, digests_file)
        if digest is None:
            with open(fd, "rb", closefd=False) as fh:
                digest = hash_file(fh)
    finally:
        os.close(fd)
    if leased is not None:
        keep(leased, digest)
    return digest


def recall(st: os.stat_result) -> str | None:
    """The digest this process's intact lease vouches for, from the listing stat alone."""
    key = (st.st_dev, st.st_ino)
    with _lock:
        held = _held.get(key)
        if held is None:
            held = _held_elsewhere(st)
            return held.digest if held is not None else None
        if held.intact() and (held.size, held.mtime_ns) == (st.st_size, st.st_mtime_ns):
            _held.move_to_end(key)
            return held.digest
        _drop(key)
        return None


def _held_elsewhere(st: os.stat_result) -> _Held | None:
    """An intact lease on the file ``st`` shows under another device: a bwrap workspace's quota
    overlay (sandbox/quota_mount.py) reports the cache's files with its own device and their
    own inode number, size, mtime and ctime. All four must match the leased file now; no other
    file can have its ctime (it cannot be set back), and a file overlayfs copied up has its own."""
    for key in list(_by_inode.get(st.st_ino, ())):
        held = _held.get(key)
        if held is None or not held.intact():
            continue
        try:
            real = os.fstat(held.fd)
        except OSError:
            continue
        if (real.st_size, real.st_mtime_ns, real.st_ctime_ns) == (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
            return held
    return None


def keep(leased: int, digest: str) -> None:
    """Remember ``digest`` for the file under the lease ``leased`` (an fd from :func:`take_lease`
    taken before the file was hashed); forgotten if the lease broke meanwhile."""
    st = os.fstat(leased)
    held = _Held(leased, digest, st.st_size, st.st_mtime_ns)
    with _lock:
        _drop((st.st_dev, st.st_ino))
        if not held.intact():
            os.close(leased)
            return
        _held[(st.st_dev, st.st_ino)] = held
        _by_inode.setdefault(st.st_ino, set()).add((st.st_dev, st.st_ino))
        room = lease_room()
        while len(_held) > room:
            _drop(next(iter(_held)))


def settle(digests_file: Path | None) -> None:
    """The end of a run, after the harness's last link or unlink of its data: write what the
    intact leases vouch for into ``digests_file`` with the stat the files have now, and give
    every lease back (a writer never waits for a run that is over)."""
    try:
        if digests_file is not None:
            _record(digests_file)
    finally:
        with _lock:
            for key in list(_held):
                _drop(key)


def _vouched() -> dict[Key, tuple[Stamp, str]]:
    """What the intact leases vouch for, with each file's stat now."""
    fresh: dict[Key, tuple[Stamp, str]] = {}
    with _lock:
        for key, held in list(_held.items()):
            if not held.intact():
                _drop(key)
                continue
            st = os.fstat(held.fd)
            fresh[key] = ((st.st_size, st.st_mtime_ns, st.st_ctime_ns), held.digest)
    return fresh


def _record(digests_file: Path) -> None:
    """Write entries whose ctime is past the racy window (see digest_cache.py): a change in the
    same clock tick as the harness's last link could carry the same ctime. Waits once, a few ms."""
    fresh = _vouched()
    newest = max((stamp[2] for stamp, _digest in fresh.values()), default=0)
    delay = newest + RACY_WINDOW_NS - time.time_ns()
    if delay > 0:
        time.sleep(delay / 1e9)
        fresh = _vouched()  # a write during the wait broke its lease
    settled = time.time_ns() - RACY_WINDOW_NS
    fresh = {key: value for key, value in fresh.items() if value[0][2] < settled and value[0][2] % 10**9}
    if not fresh:
        return
    entries = dict(_load(digests_file))  # a copy: the parsed file is shared by lookups
    if all(entries.get(key) == value for key, value in fresh.items()):
        return
    entries.update(fresh)
    _store(digests_file, entries)


def _drop(key: Key) -> None:
    keys = _by_inode.get(key[1])
    if keys is not None:
        keys.discard(key)
        if not keys:
            del _by_inode[key[1]]
    held = _held.pop(key, None)
    if held is not None:
        os.close(held.fd)


#: the last digests file parsed, by its identity and stamps: a snapshot looks up every data file,
#: and parsing the whole file for each lookup cost seconds on a task with a thousand data files
_parsed: dict[Path, tuple[tuple[int, ...], dict[Key, tuple[Stamp, str]]]] = {}


def _load(path: Path) -> dict[Key, tuple[Stamp, str]]:
    """The file's entries; none at all if it is missing, corrupt, foreign or writable by others.
    Parsed again only when the file changed (it is replaced whole, atomically: a new inode)."""
    try:
        fd = os.open(path, _OPEN)
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return {}
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with _lock:
            cached = _parsed.get(path)
        if cached is not None and cached[0] == identity:
            return cached[1]
        with open(fd, "rb", closefd=False) as fh:
            document = json.loads(fh.read(1 << 24))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    entries = _parse(document)
    with _lock:
        _parsed.clear()  # one file at a time: each worker reads the data of one run
        _parsed[path] = (identity, entries)
    return entries


def _parse(document: object) -> dict[Key, tuple[Stamp, str]]:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return {}
    entries: dict[Key, tuple[Stamp, str]] = {}
    for row in document.get("entries", ()) if isinstance(document.get("entries"), list) else ():
        if (isinstance(row, list) and len(row) == 6 and all(type(x) is int and x >= 0 for x in row[:5])
                and isinstance(row[5], str) and _DIGEST.fullmatch(row[5])):
            entries[(row[0], row[1])] = ((row[2], row[3], row[4]), row[5])
    return entries


def _store(path: Path, entries: dict[Key, tuple[Stamp, str]]) -> None:
    """Replace the file atomically (a concurrent writer's entries may be lost: a miss, never a
    wrong digest); quietly nothing where the folder cannot be written."""
    rows = [[*key, *stamp, digest] for key, (stamp, digest) in list(entries.items())[-FILE_ENTRIES:]]
    tmp = temp_path(path.parent)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
        with open(fd, "w") as fh:
            json.dump({"format": FORMAT, "entries": rows}, fh)
        os.replace(tmp, path)
    except OSError:
        unlink_quietly(tmp)

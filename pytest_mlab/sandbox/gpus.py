"""GPUs per item (``--mlab-gpus``): which GPUs a session may use, and which of them each running
item holds, for its whole run, grading included.

xdist workers and other sessions on the machine are separate processes, so they agree through
files in the machine's lock folder (:mod:`.host_locks`), one folder per machine or docker host
whose GPUs are shared out: ``gpu-<id>.lock`` per GPU, held with an exclusive ``flock`` for as long as an
item holds that GPU (the kernel releases it when the holder dies, so a killed worker frees its
GPU), and ``queue/``, one file per item waiting for a GPU, also ``flock``-held by its waiter.
Every decision is taken under ``pool.lock``, so waiting is fair: the oldest live waiter gets the
next free GPU; an item that needs no GPU takes a free one only while nobody waits, and never
waits itself. Lock files hold who holds them (run id, pid), for messages and for curious users.

Nothing here imports torch or docker: GPUs are listed with ``nvidia-smi`` and known by its index.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Callable, Iterator

from pytest_mlab.errors import SandboxError, UsageError
from pytest_mlab.sandbox.host_locks import machine_lock_folder, make_shared, open_lock_file

AUTO, NONE = "auto", "none"
LOCK_DIR = "gpus"  # in the machine's lock folder
THIS_MACHINE = "this-machine"  # the folder of this machine's own GPUs, beside one per remote docker host
POLL = 0.5  # seconds between two looks of a waiting item
LIST_TIMEOUT = 10.0  # seconds for nvidia-smi to list the GPUs
CHOICES = "auto, none, a count such as 2, or GPU indexes such as 0,1 (one GPU by index: 3,)"
WAITING = "waiting for a GPU"  # what the progress display shows of an item in line


@functools.lru_cache(maxsize=None)
def list_gpus() -> tuple[str, ...]:
    """The indexes of the GPUs ``nvidia-smi`` lists here; none where it is absent or fails.
    Asked once per process, and only when needed: a session on a machine without GPUs pays nothing."""
    program = shutil.which("nvidia-smi")
    if program is None:
        return ()
    try:
        listed = subprocess.run([program, "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                                text=True, timeout=LIST_TIMEOUT, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    if listed.returncode != 0:
        return ()
    return tuple(line.strip() for line in listed.stdout.splitlines() if line.strip().isdigit())


def parse_gpus(text: str | None, source: str) -> tuple[str, ...] | None:
    """The GPU ids ``--mlab-gpus`` names, checked against this machine; None for ``auto`` (every
    GPU listed here, looked up when the first item asks). ``source`` names the option in errors."""
    choice = (text or AUTO).strip().lower()
    if choice == AUTO:
        return None
    if choice == NONE:
        return ()
    if choice.isdigit():
        return _first(int(choice), text, source)
    names = [part.strip() for part in choice.split(",")]
    if "," not in choice or not any(names) or not all(name.isdigit() for name in names if name):
        raise UsageError(f"{source}={text}: expected {CHOICES}")
    ids = [str(int(name)) for name in names if name]
    repeated = sorted({gpu for gpu in ids if ids.count(gpu) > 1}, key=int)
    if repeated:
        raise UsageError(f"{source}={text}: GPU {', '.join(repeated)} is named twice")
    here = list_gpus()
    missing = [gpu for gpu in ids if gpu not in here]
    if missing:
        raise UsageError(f"{source}={text}: no GPU {', '.join(missing)} on this machine ({_listed(here)})")
    return tuple(ids)


def _first(count: int, text: str | None, source: str) -> tuple[str, ...]:
    if count == 0:
        raise UsageError(f"{source}={text}: a count of GPUs must be at least 1; for no GPU write none, "
                         f"for GPU 0 alone write 0, (with the comma)")
    here = list_gpus()
    if count > len(here):
        raise UsageError(f"{source}={text}: asks for {count} GPUs, but {_listed(here)}")
    return here[:count]


def _listed(here: tuple[str, ...]) -> str:
    if here:
        return f"nvidia-smi lists {len(here)}: {', '.join(here)}"
    return "nvidia-smi lists none" if shutil.which("nvidia-smi") else "nvidia-smi is not installed"


def cuda_environment(ids: tuple[str, ...] | None) -> dict[str, str]:
    """What tells CUDA (PyTorch, TensorFlow, JAX) which GPUs a script may use: the ids assigned to
    its item, in nvidia-smi's order; none assigned is an empty list, so the script cannot take a
    GPU another item holds. None (no assignment was made): nothing is set."""
    if ids is None:
        return {}
    return {"CUDA_VISIBLE_DEVICES": ",".join(ids), "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


class Lease:
    """The GPUs one item holds; released by :meth:`close` (or by the kernel, if the process dies).
    ``let_go``: what releases each GPU's hold on a remote docker host (see ``GpuPool.guard``)."""

    def __init__(self, held: dict[str, IO[str]] | None = None, let_go: list[Callable[[], None]] | None = None) -> None:
        self._held = dict(held or {})
        self._let_go = list(let_go or [])
        self.ids: tuple[str, ...] = tuple(self._held)

    def close(self) -> None:
        for release in self._let_go:  # before the lock files: a local waiter then finds the host's hold gone
            release()
        self._let_go.clear()
        for handle in self._held.values():
            try:
                handle.truncate(0)  # no stale holder in the file once it is free
            except OSError:
                pass
            handle.close()  # closing the file releases its lock
        self._held.clear()

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_NOWHERE = object()  # a claim that holds no lease anywhere


class GpuClaim:
    """The GPUs a run holds on the machine its sandboxes run on, for a run whose sandboxes may move
    (a remote docker host that stops answering is left for another). GPU ids name one machine's
    GPUs, so when a sandbox of the run opens on another host, the claim lets the first host's GPUs
    go and leases the new host's: a run never passes ids leased on one host to another host, where
    another run may hold them."""

    def __init__(self, pool_of: Callable[[object], "GpuPool"], label: str, *, required: bool,
                 on_wait: Callable[[str], None] | None = None) -> None:
        self._pool_of, self._label, self._required, self._on_wait = pool_of, label, required, on_wait
        self._where: object = _NOWHERE
        self._lease = Lease()

    def ids_on(self, where: object) -> tuple[str, ...]:
        """The GPU ids the run holds on ``where`` (a remote host; None: this machine), leased there
        first if it held them elsewhere."""
        if where != self._where:
            self._lease.close()
            self._where = _NOWHERE
            self._lease = self._pool_of(where).lease(self._label, required=self._required, on_wait=self._on_wait)
            self._where = where
        return self._lease.ids

    @property
    def ids(self) -> tuple[str, ...]:
        """The GPU ids held now, on the host they were last leased on."""
        return self._lease.ids

    def close(self) -> None:
        self._lease.close()
        self._where = _NOWHERE

    def __enter__(self) -> "GpuClaim":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class GpuPool:
    """The GPUs a session hands out, and the folder where its processes agree on who holds which.
    ``ids`` None: every GPU ``nvidia-smi`` lists (``auto``). ``guard``: for a remote docker host's
    GPUs, ``guard(gpu, run)`` holds a GPU the lock files gave on the host itself, so controllers on
    other machines see it; it returns what lets the GPU go, or None where one of them holds it."""

    folder: Path
    ids: tuple[str, ...] | None = None
    per_item: int = 1
    poll: float = POLL
    guard: Callable[[str, str], Callable[[], None] | None] | None = None

    @classmethod
    def on_this_machine(cls, ids: tuple[str, ...] | None) -> "GpuPool":
        """The pool of this machine's GPUs, agreed on with every session here, whatever its results
        folder: two sessions never hand one GPU to two runs."""
        return cls(machine_lock_folder(LOCK_DIR, THIS_MACHINE), ids)

    def on_docker_host(self, host: str, listed: Callable[[], tuple[str, ...]],
                       guard: Callable[[str, str], Callable[[], None] | None] | None = None) -> "GpuPool":
        """The pool of a remote docker host's own GPUs (``listed``: its indexes, asked only for
        ``auto``), agreed on in a folder of that host's and, through ``guard``, on the host itself;
        ``none`` stays none, and counts or indexes name this machine's GPUs, so they give a remote
        host none of its own."""
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", host)
        return replace(self, folder=self.folder.parent / f"docker-{slug}", ids=listed() if self.ids is None else (),
                       guard=guard)

    @property
    def gpus(self) -> tuple[str, ...]:
        return list_gpus() if self.ids is None else self.ids

    def lease(self, label: str, *, required: bool, timeout: float | None = None,
              on_wait: Callable[[str], None] | None = None) -> Lease:
        """GPUs for the item ``label`` (its run id): ``per_item`` free ones, or none. An item that
        does not require a GPU never waits: it gets free GPUs, or none at once. One that requires
        a GPU waits its turn, up to ``timeout`` seconds (None: as long as it takes); ``on_wait``
        hears once that it waits, in words for a progress display."""
        gpus = self.gpus
        if len(gpus) < self.per_item:
            if required:
                raise SandboxError(f"{label} needs a GPU, but this session has {len(gpus) or 'none'} to give "
                                   f"(--mlab-gpus, {self.per_item} per item); --mlab-gpus=auto gives it every GPU "
                                   "nvidia-smi lists")
            return Lease()
        make_shared(self.folder)
        with self._deciding():
            if not _live_waiters(self.folder):
                taken = self._take(label, gpus)
                if taken is not None or not required:
                    return taken or Lease()
            elif not required:  # waiting items come first
                return Lease()
            ticket = _join_queue(self.folder)
        try:
            if on_wait is not None:
                on_wait(WAITING)
            return self._wait(label, gpus, ticket, timeout)
        finally:
            with self._deciding():
                _leave_queue(ticket)

    def _wait(self, label: str, gpus: tuple[str, ...], ticket: IO[str], timeout: float | None) -> Lease:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._deciding():
                waiters = _live_waiters(self.folder)
                if waiters and waiters[0] == Path(ticket.name).name:
                    taken = self._take(label, gpus)
                    if taken is not None:
                        return taken
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                with self._deciding():
                    why = _holders(self.folder, gpus)
                raise SandboxError(f"{label} needs a GPU and got none in {timeout:g}s: {why}")
            time.sleep(self.poll if remaining is None else min(self.poll, remaining))

    @contextmanager
    def _deciding(self) -> Iterator[None]:
        """Only one process of the session decides at a time (held for milliseconds)."""
        with open_lock_file(self.folder / "pool.lock") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def _take(self, label: str, gpus: tuple[str, ...]) -> Lease | None:
        """``per_item`` free GPUs, locked and marked as ``label``'s; None (nothing kept) when fewer are free."""
        held: dict[str, IO[str]] = {}
        let_go: list[Callable[[], None]] = []
        for gpu in gpus:
            handle = open_lock_file(self.folder / f"gpu-{gpu}.lock")
            if not _try_lock(handle):
                handle.close()
                continue
            if self.guard is not None:
                release = self.guard(gpu, label)
                if release is None:  # a session of another machine holds it on the host
                    handle.close()
                    continue
                let_go.append(release)
            handle.truncate(0)  # at position 0: just opened
            handle.write(json.dumps({"run": label, "pid": os.getpid()}) + "\n")
            handle.flush()
            held[gpu] = handle
            if len(held) == self.per_item:
                return Lease(held, let_go)
        Lease(held, let_go).close()
        return None


def _try_lock(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _join_queue(folder: Path) -> IO[str]:
    """A waiter's place in line: a file named by when it came, locked for as long as it waits
    (called while deciding, so nobody takes the new file for a dead waiter's)."""
    queue = folder / "queue"
    make_shared(queue)
    handle = open_lock_file(queue / f"{time.time_ns():020d}-{os.getpid()}")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _leave_queue(ticket: IO[str]) -> None:
    try:
        os.unlink(ticket.name)
    except OSError:
        pass
    ticket.close()


def _live_waiters(folder: Path) -> list[str]:
    """The names of the waiters in line, oldest first; those whose process died are removed."""
    try:
        names = sorted(os.listdir(folder / "queue"))
    except FileNotFoundError:
        return []
    alive = []
    for name in names:
        path = folder / "queue" / name
        try:
            handle = open(path)
        except FileNotFoundError:
            continue
        with handle:
            if _try_lock(handle):  # nobody holds it: its waiter is gone
                with contextlib.suppress(OSError):  # another user's, in a shared folder: skipped, not removed
                    os.unlink(path)
            else:
                alive.append(name)
    return alive


def _holders(folder: Path, gpus: tuple[str, ...]) -> str:
    """Who holds the GPUs, as their lock files say, and how many wait: for an item that gave up."""
    said = []
    for gpu in gpus:
        try:
            holder = json.loads((folder / f"gpu-{gpu}.lock").read_text() or "{}")
        except (OSError, ValueError):
            continue
        if holder:
            said.append(f"GPU {gpu} held by {holder.get('run', '?')} (pid {holder.get('pid', '?')})")
    waiting = len(_live_waiters(folder)) - 1  # not counting the item that gives up
    return "; ".join([*said, f"{waiting} other item(s) waiting"]) + f" (lock files in {folder})"

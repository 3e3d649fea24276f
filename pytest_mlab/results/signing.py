"""Result records signed by the harness, so that --mlab-resume trusts no record an agent wrote.

A run's ``result`` record decides whether --mlab-resume runs it again, and a process that can
append to the trace could otherwise write one that says PASS. Each result record the runner
writes carries ``mac``: an HMAC-SHA256 of the record, keyed by the results folder's own secret,
``<--mlab-out>/.result-key``: 32 random bytes, made on first use, mode 600, never put in an
environment or a command line. Sandboxes never mount the results folder (bwrap binds only the
workspace and the system; docker containers run as another user and mount only the workspace),
so no agent on those backends can read the key or write the trace. Under the local backend an
agent runs with your rights and could read the key: there, a forger that knows to read it is not
stopped (docs/sandboxes.md says what local does not protect).

The key lives with the results it signs, so --mlab-resume works across sessions on the same
folder; a folder copied elsewhere keeps its key.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

from pytest_mlab.errors import UsageError

KEY_FILE = ".result-key"
MAC = "mac"
_KEY_BYTES = 32
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def results_key(out_dir: Path) -> bytes:
    """The results folder's signing key, made (atomically, mode 600) if it has none yet.
    Raises UsageError when the key file is not a private file of this user."""
    return _key(Path(out_dir).resolve() / KEY_FILE)


@functools.lru_cache(maxsize=8)
def _key(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, _OPEN)
    except FileNotFoundError:
        _make(path)
        fd = os.open(path, _OPEN)
    except OSError as exc:
        raise _unusable(path, str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise _unusable(path, f"it is not a private file of yours (mode {stat.filemode(st.st_mode)})")
        key = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != _KEY_BYTES:
        raise _unusable(path, f"it holds {len(key)} bytes, not {_KEY_BYTES}")
    return key


def _make(path: Path) -> None:
    """Write a new key beside ``path`` and link it there, unless another process was first."""
    tmp = path.with_name(f"{KEY_FILE}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.write(fd, os.urandom(_KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another worker made it first: use theirs
    finally:
        os.unlink(tmp)


def _unusable(path: Path, why: str) -> UsageError:
    return UsageError(f"{path}: the key that signs this results folder's result records cannot be used: {why}. "
                      f"Delete it (--mlab-resume will then run the folder's earlier runs again) or choose another "
                      f"--mlab-out")


def _mac(record: dict[str, Any], key: bytes) -> str:
    """The HMAC of the record as it reads back from the trace (JSON-normalised), without its mac."""
    body = json.loads(json.dumps({k: v for k, v in record.items() if k != MAC}, default=str))
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hmac.new(key, canonical.encode("utf-8", "backslashreplace"), hashlib.sha256).hexdigest()


def signed(record: dict[str, Any], key: bytes) -> dict[str, Any]:
    """``record`` with its ``mac`` (and the time it is written, which the mac covers)."""
    record = {**record, "t": record.get("t", time.time())}
    return {**record, MAC: _mac(record, key)}


def authentic(record: dict[str, Any], key: bytes) -> bool:
    """Whether ``record`` carries the mac this key gives it."""
    mac = record.get(MAC)
    return isinstance(mac, str) and hmac.compare_digest(mac, _mac(record, key))

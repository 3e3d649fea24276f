"""Where the processes of one session agree on a machine's resources through lock files.

The results folder can be shared by sessions on several machines (a network file system, one
results folder for a cluster), and a machine's GPUs are that machine's alone; so
every kind of lock lives in a folder per host: ``<results>/<kind>/<hostname>/``.
"""

from __future__ import annotations

import socket
from pathlib import Path


def host_lock_folder(out_dir: Path, kind: str) -> Path:
    """This host's folder of ``kind`` locks in the results folder ``out_dir`` (not created)."""
    return Path(out_dir) / kind / socket.gethostname()

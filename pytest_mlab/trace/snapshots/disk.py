"""How the store's files reach disk: each blob and manifest is written under a temp name and
``os.replace``-d into place, so a crash or a concurrent writer never leaves a partial one in view,
and whatever still bears a temp name is no part of the store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

TMP_PREFIX = ".tmp-"


def temp_path(folder: Path) -> Path:
    """A fresh name in ``folder`` to write under before renaming into place."""
    return folder / f"{TMP_PREFIX}{os.urandom(8).hex()}"


def unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def stored_files(folder: Path) -> Iterator[Path]:
    """Every file in ``folder`` put in place (temp files excluded)."""
    for dirpath, _dirnames, filenames in os.walk(folder):
        for name in filenames:
            if not name.startswith(TMP_PREFIX):
                yield Path(dirpath, name)

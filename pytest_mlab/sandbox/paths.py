"""The one place that decides whether a path an agent wrote stays inside its workspace.

Nothing else in pytest-mlab checks paths, so every backend routes every agent-supplied path
through :func:`resolve_in_workspace`. The check has two halves:

1. :func:`normalize_relpath` is purely lexical: it rejects absolute paths, ``~``, Windows drive
   paths, NUL bytes and ``..`` components that climb above the workspace, and returns one
   canonical POSIX spelling (``./train.csv`` and ``train.csv`` are the same file).
2. :func:`resolve_in_workspace` then follows symbolic links on the host and checks the real path
   with :meth:`pathlib.Path.is_relative_to` (never a string prefix, so ``/tmp/ws-evil`` does not
   pass for the root ``/tmp/ws``).

Limit: the check happens when the harness uses the path. Code the agent runs concurrently could
swap a directory for a symlink between the check and the use; the local backend kills everything
the agent started before the harness touches the workspace again, and the container backends
confine the agent's code itself.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pytest_mlab.errors import EnvError

_HINT = "use a path relative to the workspace such as 'train.py'"
_DRIVE = re.compile(r"^[A-Za-z]:([\\/]|$)")


def normalize_relpath(user_path: str) -> str:
    """Return the canonical workspace-relative POSIX form of ``user_path`` (``"."`` for the root).

    Purely lexical, so it is safe to call before anything exists on disk. Surrounding whitespace
    is stripped (LLMs add it); quotes are not. Backslashes are read as separators, because an
    agent that writes ``data\\train.csv`` means a directory, and ``..\\x`` must not slip past the
    ``..`` check.
    """
    if not isinstance(user_path, str):
        raise EnvError(f"path must be a string, got {type(user_path).__name__}; {_HINT}")
    if "\x00" in user_path:
        raise EnvError(f"path {user_path!r} contains a NUL byte; {_HINT}")
    text = user_path.strip()
    if _DRIVE.match(text):
        raise EnvError(f"path {user_path!r} looks like a Windows drive path; {_HINT}")
    text = text.replace("\\", "/")
    if text.startswith("~"):
        raise EnvError(f"path {user_path!r} refers to a home directory; {_HINT}")
    if text.startswith("/"):
        raise EnvError(f"path {user_path!r} is absolute; {_HINT}")
    parts: list[str] = []
    for part in text.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise EnvError(f"path {user_path!r} leaves the workspace; {_HINT}")
            parts.pop()
        else:
            parts.append(part)
    return "/".join(parts) if parts else "."


def resolve_in_workspace(root: Path, user_path: str) -> Path:
    """Return the real absolute host path for ``user_path`` inside ``root``.

    Symbolic links are followed (also chains and linked parent directories); the result must be
    ``root`` itself or lie below it, otherwise :class:`EnvError` is raised. The target need not
    exist, so this also serves paths about to be created.
    """
    relative = normalize_relpath(user_path)
    real_root = Path(os.path.realpath(root))
    candidate = real_root if relative == "." else real_root / relative
    resolved = Path(os.path.realpath(candidate))
    if resolved != real_root and not resolved.is_relative_to(real_root):
        raise EnvError(
            f"path {user_path!r} leads outside the workspace through a symbolic link; {_HINT}"
        )
    return resolved

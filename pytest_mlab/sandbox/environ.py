"""The environment variables untrusted code may see: an allow-list, so API keys never leak."""

from __future__ import annotations

import os

PASSED_THROUGH = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")


def clean_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Allow-listed variables of this process plus ``extra``; everything else (keys, tokens) is dropped."""
    env = {name: os.environ[name] for name in PASSED_THROUGH if name in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update({"PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg"})
    env.update(extra or {})
    return env

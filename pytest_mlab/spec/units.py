"""Durations and sizes as people write them in specs and on the command line."""

from __future__ import annotations

import math
import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_COMPOUND = re.compile(r"(\d+(?:\.\d+)?)([dhms])")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)(b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_duration(value: str | int | float) -> float:
    """``90`` / ``"90s"`` / ``"30m"`` / ``"5h"`` / ``"1d"`` -> seconds. Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        seconds = _parse_duration_text(str(value))
    if not math.isfinite(seconds):
        raise ValueError(f"{value!r} is not a finite duration")
    if seconds <= 0:
        raise ValueError(f"{value!r} must be longer than zero")
    return seconds


def _parse_duration_text(text: str) -> float:
    """``30m`` or compound forms as :func:`format_duration` writes them: ``3m05s``, ``1h02m``."""
    match = _DURATION.match(text)
    if match:
        return float(match.group(1)) * _SECONDS[match.group(2)]
    compact = text.strip()
    parts = _COMPOUND.findall(compact)
    if not parts or "".join(number + unit for number, unit in parts) != compact:
        raise ValueError(f"{text!r} is not a duration; write seconds or a number with s, m, h or d, e.g. 30m")
    return sum(float(number) * _SECONDS[unit] for number, unit in parts)


def parse_size(value: str | int) -> int:
    """``1048576`` / ``"512K"`` / ``"100M"`` / ``"8G"`` -> bytes (powers of 1024). Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        size = value
    else:
        match = _SIZE.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a size; write bytes or a number with K, M, G or T, e.g. 100M")
        number = float(match.group(1)) * 1024 ** _POWERS[match.group(2).lower()]
        if not math.isfinite(number):
            raise ValueError(f"{value!r} is not a finite size")
        size = int(number)
    if size <= 0:
        raise ValueError(f"{value!r} must be larger than zero")
    return size


def format_duration(seconds: float) -> str:
    """Short human form for tables: 0.4s, 12s, 3m05s, 1h02m."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"

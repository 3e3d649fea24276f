"""JSON that every reader accepts: Python writes ``Infinity`` and ``NaN`` for non-finite floats,
which strict parsers (browsers, jq, most languages) reject. An improvement over a baseline of 0
is infinite, so every JSON file or property pytest-mlab writes goes through here."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """``json.dumps`` that never writes ``Infinity`` or ``NaN``; anything else unknown becomes its str."""
    return json.dumps(finite(value), allow_nan=False, default=str, **options)

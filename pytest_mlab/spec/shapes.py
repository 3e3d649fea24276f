"""Values a spec's schema has already judged, read without tripping on a wrong shape: the schema
has said what is wrong with such a value, so later checks read it as empty."""

from __future__ import annotations

from typing import Any


def as_mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else an empty one (the schema has said what is wrong)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a list, else an empty one (the schema has said what is wrong)."""
    return value if isinstance(value, list) else []

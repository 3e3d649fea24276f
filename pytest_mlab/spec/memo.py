"""Work done once per key however often it is asked for, failures included: a broken spec is
judged once per session, and its error comes back like a result."""

from __future__ import annotations

from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


def remembered(cache: dict, key: Hashable, compute: Callable[[], T], errors: type[Exception]) -> T:
    """``compute()`` once per ``key``; an error of type ``errors`` is kept and raised again, like a result."""
    if key not in cache:
        try:
            cache[key] = compute()
        except errors as exc:
            cache[key] = exc
    found = cache[key]
    if isinstance(found, errors):
        raise found
    return found

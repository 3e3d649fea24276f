"""``module:attr`` references in specs (an action's function, an agent's class): the one resolver."""

from __future__ import annotations

import importlib
from typing import Any, Callable

from pytest_mlab.errors import SpecError


def resolve_object(reference: str, *, source: str, line: int | None = None, where: str = "implementation",
                   purpose: str) -> Any:
    """Import ``module`` and return its ``attr``; a reference that does not resolve is a SpecError
    naming the spec file and what the object was for (``purpose``, e.g. "action 'List Files'")."""
    module_name, colon, attribute = reference.partition(":")
    if not colon or not module_name or not attribute:
        raise SpecError(source, line, where, f"'{reference}' for {purpose} must look like 'package.module:name'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(source, line, where, f"cannot import '{module_name}' for {purpose}: {exc}") from None
    found = module
    for part in attribute.split("."):
        found = getattr(found, part, _MISSING)
        if found is _MISSING:
            raise SpecError(source, line, where, f"'{module_name}' has no '{attribute}' for {purpose}")
    return found


def resolve_function(reference: str, *, source: str, line: int | None = None, purpose: str) -> Callable[..., Any]:
    """:func:`resolve_object`, which must be callable: an action's function."""
    found = resolve_object(reference, source=source, line=line, purpose=purpose)
    if not callable(found):
        raise SpecError(source, line, "implementation",
                        f"'{reference}' is not a function, so it cannot carry out {purpose}")
    return found


_MISSING = object()

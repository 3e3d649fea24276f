"""Resolve Action specs' ``implementation: module:function`` to their callables: the one registry."""

from __future__ import annotations

from typing import Callable, Iterable

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.models import ActionSpec
from pytest_mlab.spec.refs import resolve_object


def load_implementation(spec: ActionSpec) -> Callable[..., str]:
    function = resolve_object(spec.implementation, source=spec.source, purpose=f"action '{spec.name}'")
    if not callable(function):
        raise SpecError(spec.source, None, "implementation",
                        f"'{spec.implementation}' is not a function, so it cannot carry out action '{spec.name}'")
    return function


def implementations(specs: Iterable[ActionSpec]) -> dict[str, Callable[..., str]]:
    """Every action's callable by name, for the Environment to dispatch to."""
    return {spec.name: load_implementation(spec) for spec in specs}

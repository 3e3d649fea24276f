"""Resolve Action specs' ``implementation: module:function`` to their callables: the one registry."""

from __future__ import annotations

from typing import Callable, Iterable

from pytest_mlab.spec.models import ActionSpec
from pytest_mlab.spec.refs import resolve_function


def load_implementation(spec: ActionSpec) -> Callable[..., str]:
    return resolve_function(spec.implementation, source=spec.source, purpose=f"action '{spec.name}'")


def implementations(specs: Iterable[ActionSpec]) -> dict[str, Callable[..., str]]:
    """Every action's callable by name, for the Environment to dispatch to."""
    return {spec.name: load_implementation(spec) for spec in specs}

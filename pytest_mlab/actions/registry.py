"""Resolve an Action spec's ``implementation: module:function`` to the callable: the one registry."""

from __future__ import annotations

import importlib
from typing import Callable

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.models import ActionSpec


def load_implementation(spec: ActionSpec) -> Callable[..., str]:
    module_name, _, function_name = spec.implementation.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(spec.source, None, "implementation",
                        f"cannot import '{module_name}' for action '{spec.name}': {exc}") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise SpecError(spec.source, None, "implementation",
                        f"'{module_name}' has no function '{function_name}' for action '{spec.name}'")
    return function

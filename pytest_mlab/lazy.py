"""Package attributes imported on first use (PEP 562), so that importing a package for one light
name does not load its heavy modules into every pytest run."""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's ``__getattr__``: ``homes`` maps each public name to its submodule."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{home}"), name)

    return __getattr__

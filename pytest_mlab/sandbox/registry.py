"""Sandbox backends by name, as ``--sandbox=NAME`` selects them."""

from __future__ import annotations

from typing import Any, Callable

from pytest_mlab.errors import UsageError
from pytest_mlab.sandbox.base import Sandbox


def _local(**kwargs: Any) -> Sandbox:
    from pytest_mlab.sandbox.local import LocalSandbox

    return LocalSandbox(**kwargs)


# Factories import their backend lazily, so a missing docker client cannot break ``--sandbox=local``.
_FACTORIES: dict[str, Callable[..., Sandbox]] = {
    "local": _local,
}

#: Every name ``open_sandbox`` accepts, in the order shown to users.
SANDBOX_KINDS: tuple[str, ...] = tuple(_FACTORIES)


def open_sandbox(kind: str, **kwargs: Any) -> Sandbox:
    """Create a sandbox of the named kind; keyword arguments go to the backend's constructor.

    Every backend's constructor accepts ``options: SandboxOptions | None`` (the run's limits).
    """
    factory = _FACTORIES.get(kind)
    if factory is None:
        known = ", ".join(SANDBOX_KINDS)
        raise UsageError(f"--sandbox=NAME: unknown sandbox {kind!r}; choose one of: {known}")
    return factory(**kwargs)

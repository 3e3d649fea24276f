"""Where an agent's workspace lives and its code runs: one interface, several backends.

Names are imported on first use, so that reading the ``--sandbox`` choices does not load the
backends into every pytest run.
"""

from __future__ import annotations

from pytest_mlab.lazy import lazy_attributes

_HOMES = {
    "Entry": "base", "ExecResult": "base", "Sandbox": "base", "SandboxOptions": "base", "LocalSandbox": "local",
    "normalize_relpath": "paths", "resolve_in_workspace": "paths", "SANDBOX_KINDS": "registry",
    "open_sandbox": "registry",
}

__all__ = sorted(_HOMES)


__getattr__ = lazy_attributes(__name__, _HOMES)

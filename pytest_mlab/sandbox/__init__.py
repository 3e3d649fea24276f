"""Where an agent's workspace lives and its code runs: one interface, several backends."""

from pytest_mlab.sandbox.base import Entry, ExecResult, Sandbox, SandboxOptions
from pytest_mlab.sandbox.local import LocalSandbox
from pytest_mlab.sandbox.paths import normalize_relpath, resolve_in_workspace
from pytest_mlab.sandbox.registry import SANDBOX_KINDS, open_sandbox

__all__ = [
    "SandboxOptions",
    "Entry",
    "ExecResult",
    "LocalSandbox",
    "SANDBOX_KINDS",
    "Sandbox",
    "normalize_relpath",
    "open_sandbox",
    "resolve_in_workspace",
]

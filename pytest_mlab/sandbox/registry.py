"""Sandbox backends by name, as ``--sandbox=NAME`` selects them, and whether each can run here.

``auto`` takes the first backend of :data:`AUTO_ORDER` whose probe works, else the local backend,
which isolates nothing; that fall-back is announced at the top of the session
(:func:`fallback_notice`), in the terminal summary (:func:`isolation_warning`) and in results.json
(:func:`isolation_record`), each naming the probe's real cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from pytest_mlab.errors import UsageError
from pytest_mlab.sandbox.base import Sandbox


@dataclass(frozen=True)
class Backend:
    """How to open one kind of sandbox and how to tell, cheaply and once, whether it works here."""

    factory: Callable[..., Sandbox]
    unavailable: Callable[[], str | None]  # None when usable; else why not and what to install


def _local(**kwargs: Any) -> Sandbox:
    from pytest_mlab.sandbox.local import LocalSandbox

    return LocalSandbox(**kwargs)


def _bwrap(**kwargs: Any) -> Sandbox:
    from pytest_mlab.sandbox.bwrap import BwrapSandbox

    return BwrapSandbox(**kwargs)


def _bwrap_unavailable() -> str | None:
    from pytest_mlab.sandbox.bwrap import unavailable_reason

    return unavailable_reason()


def _docker(**kwargs: Any) -> Sandbox:
    from pytest_mlab.sandbox.docker import DockerSandbox

    return DockerSandbox(**kwargs)


def _docker_unavailable() -> str | None:
    from pytest_mlab.sandbox.docker import unavailable_reason

    return unavailable_reason()


# Factories import their backend lazily, so a missing docker client cannot break ``--sandbox=local``.
_BACKENDS: dict[str, Backend] = {
    "local": Backend(_local, lambda: None),
    "bwrap": Backend(_bwrap, _bwrap_unavailable),
    "docker": Backend(_docker, _docker_unavailable),
}

AUTO = "auto"
#: What ``--sandbox=auto`` tries, in order; the local backend when none of them works.
AUTO_ORDER: tuple[str, ...] = ("bwrap",)

#: Every name ``open_sandbox`` accepts, in the order shown to users.
SANDBOX_KINDS: tuple[str, ...] = (AUTO, *_BACKENDS)


def _backend(kind: str) -> Backend:
    backend = _BACKENDS.get(kind)
    if backend is None:
        known = ", ".join(SANDBOX_KINDS)
        raise UsageError(f"--sandbox=NAME: unknown sandbox {kind!r}; choose one of: {known}")
    return backend


def sandbox_unavailable(kind: str) -> str | None:
    """Why the named backend cannot run here (what to install), or None when it can."""
    if kind == AUTO:
        return None
    return _backend(kind).unavailable()


def resolve_kind(kind: str) -> str:
    """The backend a kind stands for: ``auto`` is the first usable backend of ``AUTO_ORDER``, else local."""
    if kind != AUTO:
        _backend(kind)
        return kind
    return next((name for name in AUTO_ORDER if sandbox_unavailable(name) is None), "local")


def open_sandbox(kind: str, **kwargs: Any) -> Sandbox:
    """Create a sandbox of the named kind; keyword arguments go to the backend's constructor.

    Every backend's constructor accepts ``options: SandboxOptions | None`` (the run's limits).
    """
    return _backend(resolve_kind(kind)).factory(**kwargs)


def _fallback_reasons() -> str:
    """Why each backend ``auto`` tries could not run, in the backends' own words."""
    return "; ".join(f"{name}: {sandbox_unavailable(name)}" for name in AUTO_ORDER)


def isolation_warning(kind: str, used: Iterable[str]) -> str | None:
    """The one line the terminal summary shows when runs executed agents' code unconfined."""
    if "local" not in set(used):
        return None
    if kind == AUTO:
        return (f"WARNING: code run by agents was NOT isolated: --sandbox=auto fell back to the local sandbox "
                f"({_fallback_reasons()})")
    return "note: --sandbox=local: code run by agents was not isolated; it ran with your user's rights"


def fallback_notice(kind: str) -> str | None:
    """The notice the top of a session shows when ``auto`` will run agents' code unconfined:
    ``auto`` never picks a weaker sandbox without saying so before the first run."""
    if kind != AUTO or resolve_kind(kind) != "local":
        return None
    return (f"WARNING: --sandbox=auto found no isolating sandbox, so code run by agents will NOT be isolated: "
            f"it runs with your user's rights, sees your files and your network. Why: {_fallback_reasons()}. "
            "Fix that, or pass --sandbox=local to run unconfined on purpose.")


def isolation_record(kind: str, used: Iterable[str] = ()) -> dict[str, str]:
    """What results.json keeps about the session's isolation: the backend ``kind`` resolved to,
    and a note saying whether agents' code was confined and, if not, why. ``used``: the backend
    each run really used (a worker whose own probe failed may have fallen back alone)."""
    resolved = resolve_kind(kind)
    unconfined = sum(1 for name in used if name == "local")
    if resolved != "local" and not unconfined:
        note = f"isolated ({resolved})"
    elif kind != AUTO:
        note = "not isolated: --sandbox=local was chosen"
    elif resolved == "local":
        note = f"NOT isolated: --sandbox=auto fell back to the local sandbox ({_fallback_reasons()})"
    else:
        note = f"NOT isolated: {unconfined} run(s) fell back to the local sandbox on a worker where {resolved} failed"
    return {"sandbox_resolved": resolved, "isolation": note}

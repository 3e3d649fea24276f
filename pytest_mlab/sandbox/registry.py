"""Sandbox backends by name, as ``--sandbox=NAME`` selects them, whether each can run here, and the
removal of what killed sessions left of them (:func:`remove_leftovers`).

A backend is one class with its whole lifecycle (:class:`~pytest_mlab.sandbox.base.Sandbox`'s
class methods: open, whether it can run here, its own leftovers; each sandbox's ``close``): the
registry only names them and asks them, the same questions of every one.

``auto`` takes the first backend of :data:`AUTO_ORDER` whose probe works, else the local backend,
which isolates nothing; that fall-back is announced before the session's first run
(:func:`fallback_notice`), in the terminal summary (:func:`isolation_warning`) and in results.json
(:func:`isolation_record`), each naming the probe's real cause. Plugins add backends of their own
through :func:`add_backends` (the plugin's ``pytest_mlab_sandbox_backends`` hook).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Protocol

from pytest_mlab.errors import UsageError

if TYPE_CHECKING:
    from pytest_mlab.sandbox.base import Sandbox
    from pytest_mlab.sandbox.leftovers import Cleanup


class SandboxBackend(Protocol):
    """What the registry asks of a backend: its whole lifecycle. A built-in backend is a
    :class:`~pytest_mlab.sandbox.base.Sandbox` class, which has these as class methods; a plugin's
    may be a :class:`Backend` made of plain callables."""

    @property
    def leftover_noun(self) -> str | None: ...

    def open(self, **kwargs: Any) -> Sandbox: ...

    def unavailable(self) -> str | None: ...

    def leftovers_unreachable(self) -> str | None: ...

    def remove_leftovers(self, *, everything: bool = False) -> list[str]: ...


@dataclass(frozen=True)
class Leftovers:
    """What a plugin's backend leaves behind beyond temp folders and cgroups when its creator is
    killed, and their removal."""

    noun: str  # what one of them is called in messages
    unreachable: Callable[[], str | None]  # why they cannot be looked for now, or None
    # remove(everything=False): the names removed; those of live processes too with ``everything``
    remove: Callable[..., list[str]]


@dataclass(frozen=True)
class Backend:
    """A plugin's backend made of plain callables: how to open one and how to tell, cheaply and
    once, whether it works here."""

    factory: Callable[..., Sandbox]
    unavailable: Callable[[], str | None]  # None when usable; else why not and what to install
    leftovers: Leftovers | None = None  # None: it leaves nothing of its own

    @property
    def leftover_noun(self) -> str | None:
        return self.leftovers.noun if self.leftovers else None

    def open(self, **kwargs: Any) -> Sandbox:
        return self.factory(**kwargs)

    def leftovers_unreachable(self) -> str | None:
        return self.leftovers.unreachable() if self.leftovers else None

    def remove_leftovers(self, *, everything: bool = False) -> list[str]:
        return self.leftovers.remove(everything=everything) if self.leftovers else []


#: Every backend by name: the built-in ones as ``module:class``, imported on first use so that a
#: missing docker SDK cannot break ``--sandbox=local``; plugins' added by :func:`add_backends`.
_BACKENDS: dict[str, str | SandboxBackend] = {
    "local": "pytest_mlab.sandbox.local:LocalSandbox",
    "bwrap": "pytest_mlab.sandbox.bwrap:BwrapSandbox",
    "docker": "pytest_mlab.sandbox.docker.local_daemon:DockerSandbox",
}

AUTO = "auto"
#: What ``--sandbox=auto`` tries, in order, before it falls back.
AUTO_ORDER: tuple[str, ...] = ("bwrap",)
#: What ``auto`` falls back to when none of them works: the backend that isolates nothing.
FALLBACK = "local"
_BUILT_IN = frozenset((AUTO, *_BACKENDS))
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class _Kinds(Sequence):
    """Every name ``open_sandbox`` accepts, in the order shown to users; read live, so that
    backends added by plugins (:func:`add_backends`) are accepted wherever the names are checked."""

    def __getitem__(self, index):
        return (AUTO, *_BACKENDS)[index]

    def __len__(self) -> int:
        return 1 + len(_BACKENDS)

    def __repr__(self) -> str:
        return repr(tuple(self))


SANDBOX_KINDS: Sequence[str] = _Kinds()


def add_backends(backends: Mapping[str, Backend | Callable[..., Sandbox]]) -> Callable[[], None]:
    """Backends from plugins (the ``pytest_mlab_sandbox_backends`` hook), by name: a
    :class:`Backend`, or a bare factory (taken as always usable). Returns what removes them again.
    A factory's sandboxes must carry the same ``name``: grading opens sandboxes of that kind."""
    added: dict[str, Backend] = {}
    for name, backend in backends.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise UsageError(f"sandbox backend name {name!r}: use lower-case letters, digits, '-' and '_'")
        if name in _BUILT_IN or name in _BACKENDS:
            raise UsageError(f"sandbox backend '{name}' is already defined; give the added one another name")
        if isinstance(backend, Backend):
            added[name] = backend
        elif callable(backend):
            added[name] = Backend(backend, lambda: None)
        else:
            raise UsageError(f"sandbox backend '{name}': expected a factory or a Backend, not {type(backend).__name__}")
    _BACKENDS.update(added)

    def remove() -> None:
        for name in added:
            _BACKENDS.pop(name, None)

    return remove


def _check(kind: str) -> None:
    if kind not in _BACKENDS:
        known = ", ".join(SANDBOX_KINDS)
        raise UsageError(f"--sandbox=NAME: unknown sandbox {kind!r}; choose one of: {known}")


def _backend(kind: str) -> SandboxBackend:
    """The named backend, its module imported on first use."""
    _check(kind)
    backend = _BACKENDS[kind]
    if isinstance(backend, str):
        module, _, name = backend.partition(":")
        backend = _BACKENDS[kind] = getattr(importlib.import_module(module), name)
    return backend


def sandbox_unavailable(kind: str) -> str | None:
    """Why the named backend cannot run here (what to install), or None when it can."""
    if kind == AUTO:
        return None
    return _backend(kind).unavailable()


def resolve_kind(kind: str) -> str:
    """The backend a kind stands for: ``auto`` is the first usable backend of ``AUTO_ORDER``, else local."""
    if kind != AUTO:
        _check(kind)
        return kind
    return next((name for name in AUTO_ORDER if sandbox_unavailable(name) is None), FALLBACK)


def open_sandbox(kind: str, **kwargs: Any) -> Sandbox:
    """Create a sandbox of the named kind; keyword arguments go to the backend's constructor.

    Every backend's constructor accepts ``options: SandboxOptions | None`` (the run's limits).
    """
    return _backend(resolve_kind(kind)).open(**kwargs)


def remove_leftovers(kinds: str | Iterable[str] | None = None, *, everything: bool = False,
                     skip_unreachable: bool = False) -> "Cleanup":
    """Remove what killed sessions and workers left on this machine: the temp folders and cgroups
    of dead processes, then the named backends' own leftovers (None: every backend's; ``auto``:
    the backend it resolves to). ``everything`` removes backends' leftovers of live processes
    too. A backend whose leftovers cannot be looked for (docker's daemon is down) raises its
    MlabError, or with ``skip_unreachable`` is reported as not checked. Leftovers of processes
    that are still running are never swept."""
    from pytest_mlab.sandbox.leftovers import Cleanup, Removed, sweep

    swept = sweep()
    names = _BACKENDS if kinds is None else [kinds] if isinstance(kinds, str) else kinds
    removed = []
    for name in dict.fromkeys(backend for kind in names for backend in _candidates(kind)):
        backend = _backend(name)
        noun = backend.leftover_noun
        if noun is None:
            continue
        why = backend.leftovers_unreachable() if skip_unreachable else None
        removed.append(Removed(name, noun, [] if why else backend.remove_leftovers(everything=everything),
                               unchecked=why))
    return Cleanup(swept, removed)


def _candidates(kind: str) -> tuple[str, ...]:
    """The backends a kind may stand for, without probing which one works (probes cost a process)."""
    if kind == AUTO:
        return (*AUTO_ORDER, FALLBACK)
    _check(kind)
    return (kind,)


def _fallback_reasons() -> str:
    """Why each backend ``auto`` tries could not run, in the backends' own words."""
    return "; ".join(f"{name}: {sandbox_unavailable(name)}" for name in AUTO_ORDER)


def isolation_warning(kind: str, used: Iterable[str]) -> str | None:
    """The one line the terminal summary shows when runs executed agents' code unconfined."""
    if FALLBACK not in set(used):
        return None
    if kind == AUTO:
        return (f"WARNING: code run by agents was NOT isolated: --sandbox=auto fell back to the local sandbox "
                f"({_fallback_reasons()})")
    return "note: --sandbox=local: code run by agents was not isolated; it ran with your user's rights"


LOCAL_WARNING = ("WARNING: --sandbox=local: code run by agents is NOT isolated; it can read the hidden answers, "
                 "write the data cache and the results, and hide work from the clock, so its scores can be forged "
                 "(docs/sandboxes.md)")


def fallback_notice(kind: str) -> str | None:
    """The notice the top of a session shows when agents' code will run unconfined: ``auto``
    never picks a weaker sandbox without saying so before the first run, and ``local``, chosen on
    purpose, still gets one line saying what it does not protect."""
    if kind == FALLBACK:
        return LOCAL_WARNING
    if kind != AUTO or resolve_kind(kind) != FALLBACK:
        return None
    return (f"WARNING: --sandbox=auto found no isolating sandbox, so code run by agents will NOT be isolated: "
            f"it runs with your user's rights, sees your files and your network. Why: {_fallback_reasons()}. "
            "Fix that, or pass --sandbox=local to run unconfined on purpose.")


def isolation_record(kind: str, used: Iterable[str] = ()) -> dict[str, str]:
    """What results.json keeps about the session's isolation: the backend ``kind`` resolved to,
    and a note saying whether agents' code was confined and, if not, why. ``used``: the backend
    each run really used (a worker whose own probe failed may have fallen back alone)."""
    resolved = resolve_kind(kind)
    unconfined = sum(1 for name in used if name == FALLBACK)
    if resolved != FALLBACK and not unconfined:
        note = f"isolated ({resolved})"
    elif kind != AUTO:
        note = "not isolated: --sandbox=local was chosen"
    elif resolved == FALLBACK:
        note = f"NOT isolated: --sandbox=auto fell back to the local sandbox ({_fallback_reasons()})"
    else:
        note = f"NOT isolated: {unconfined} run(s) fell back to the local sandbox on a worker where {resolved} failed"
    return {"sandbox_resolved": resolved, "isolation": note}

"""API keys held by the harness, out of the environment of every process it starts.

An environment is readable by any process of the same user (``/proc/PID/environ``), and is
inherited by every child. So the process that starts a session (the controller, or the only
process) takes the provider keys litellm needs out of ``os.environ`` as it configures, before any
pytest-xdist worker, sandbox, grader or recipe is started: their environments never hold them.
Workers receive them with their ``workerinput`` (over xdist's channel, not an environment or a
command line), and the LLM provider hands them to litellm as ``api_key`` on each call.

What remains: ``/proc/PID/environ`` shows a process's environment as it was when it was
*started*, so the controller's own entry still shows the keys it was started with (docs/llm.md).
Only the variables in :data:`HELD` are taken; other providers' variables stay where litellm
reads them.
"""

from __future__ import annotations

import os

#: key variables taken out of the environment, and the provider whose ``api_key`` each is
HELD = {"OPENAI_API_KEY": "openai", "ANTHROPIC_API_KEY": "anthropic"}

_held: dict[str, str] = {}


def take_from_environment() -> None:
    """Move the :data:`HELD` variables from ``os.environ`` into this process (a later value wins)."""
    for name in HELD:
        value = os.environ.pop(name, None)
        if value is not None:
            _held[name] = value


def adopt(keys: dict[str, str]) -> None:
    """Keys handed over by the controller (a worker's ``workerinput``)."""
    _held.update({name: value for name, value in keys.items() if name in HELD and isinstance(value, str)})


def release() -> None:
    """Put the held keys back into ``os.environ``: for a session that turned out not to use
    pytest-mlab (a project's own tests under xdist, whose workers were started without them)."""
    for name, value in _held.items():
        os.environ.setdefault(name, value)
    _held.clear()


def held() -> dict[str, str]:
    """The keys this process holds, to hand to a starting worker."""
    return dict(_held)


def is_set(name: str) -> bool:
    """Whether the key variable ``name`` was given, in the environment or taken from it."""
    return name in os.environ or name in _held


def api_key(provider: str | None) -> str | None:
    """The key held for ``provider``, for litellm's ``api_key``; None leaves litellm to its environment."""
    for name, owner in HELD.items():
        if owner == provider and name in _held:
            return _held[name]
    return None

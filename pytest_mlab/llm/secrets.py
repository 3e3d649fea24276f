"""API keys held by the harness, out of the environment of every process it starts.

An environment is readable by any process of the same user (``/proc/PID/environ``), and is
inherited by every child. So the process that starts a session (the controller, or the only
process) takes the provider keys litellm needs out of ``os.environ`` as it configures, before any
pytest-xdist worker, sandbox, grader or recipe is started: their environments never hold them.
Workers receive them with their ``workerinput`` (over xdist's channel, not an environment or a
command line), and the LLM provider hands them to litellm as ``api_key`` on each call.

``/proc/PID/environ`` shows the block of memory a process's environment was *started* in, which
removing a variable from ``os.environ`` does not change: so the value's bytes there are
overwritten too (:func:`_erase_from_start_block`), once nothing points at them any more.
Only the variables in :data:`HELD` are taken (every provider whose key litellm accepts as
``api_key``); credentials of other shapes (AWS's for bedrock, ``ANTHROPIC_AUTH_TOKEN``, a
Google credentials file) stay where litellm reads them (docs/llm.md).
"""

from __future__ import annotations

import ctypes
import os

#: key variables taken out of the environment, and the litellm provider whose ``api_key`` each is;
#: where a provider has two, the first given wins
HELD = {
    "OPENAI_API_KEY": "openai",
    "ANTHROPIC_API_KEY": "anthropic",
    "GEMINI_API_KEY": "gemini",
    "GOOGLE_API_KEY": "gemini",
    "MISTRAL_API_KEY": "mistral",
    "GROQ_API_KEY": "groq",
    "TOGETHERAI_API_KEY": "together_ai",
    "DEEPSEEK_API_KEY": "deepseek",
    "XAI_API_KEY": "xai",
    "OPENROUTER_API_KEY": "openrouter",
    "COHERE_API_KEY": "cohere",
    "FIREWORKS_AI_API_KEY": "fireworks_ai",
    "HUGGINGFACE_API_KEY": "huggingface",
    "PERPLEXITYAI_API_KEY": "perplexity",
    "AZURE_API_KEY": "azure",
}
#: providers litellm also reaches under another name, with the same key
_ALIASES = {"cohere_chat": "cohere"}

_held: dict[str, str] = {}


def take_from_environment() -> None:
    """Move the :data:`HELD` variables from ``os.environ`` into this process (a later value wins)."""
    taken = set()
    for name in HELD:
        value = os.environ.pop(name, None)
        if value is not None:
            _held[name] = value
            taken.add(name)
    if taken:
        _erase_from_start_block(taken)


def _erase_from_start_block(names: set[str]) -> None:
    """Overwrite with zeros the values of ``names`` in the memory this process's environment was
    started in, which ``/proc/PID/environ`` reads: removing them from ``os.environ`` (unsetenv)
    only drops the C library's pointers to them. Linux only; elsewhere nothing happens."""
    try:
        with open("/proc/self/stat", "rb") as handle:
            fields = handle.read().rpartition(b")")[2].split()
        start, end = int(fields[47]), int(fields[48])  # env_start and env_end, fields 50 and 51
    except (OSError, ValueError, IndexError):
        return
    if not 0 < start < end:
        return
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        raw_name, equals, value = entry.partition(b"=")
        name = raw_name.decode("utf-8", "replace")
        if equals and value and name in names and name not in os.environ:
            ctypes.memset(start + offset + len(raw_name) + 1, 0, len(value))
        offset += len(entry) + 1


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
    provider = _ALIASES.get(provider or "", provider)
    for name, owner in HELD.items():
        if owner == provider and name in _held:
            return _held[name]
    return None

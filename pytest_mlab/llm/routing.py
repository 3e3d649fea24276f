"""Which provider litellm sends a model string to, read from litellm's own data files without
importing litellm (seconds of CPU per process): its provider list (the ``LlmProviders`` enum),
its openai-compatible providers (``providers.json``) and its local model cost map.

The answer is certain for the usual names (``gpt-4``, ``openai/...``, ``anthropic/...``) and for
a ``prefix/model`` whose prefix no provider has; anything else is :data:`UNSURE`, and the caller
asks litellm itself (:mod:`pytest_mlab.llm.keys`)."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.llm.secrets import HELD, is_set

#: Each provider's API-key variables, for the providers litellm's ``validate_environment`` checks
#: that way (one of them must be set; the first is named). Other providers are left to litellm;
#: tests/llm/test_routing.py checks this table against litellm. Azure needs more than a key
#: (its endpoint and version): litellm answers for it.
KEY_VARIABLES = {**{provider: tuple(name for name, owner in HELD.items() if owner == provider)
                    for provider in dict.fromkeys(HELD.values()) if provider != "azure"},
                 "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")}

_ENUM = re.compile(r"^class LlmProviders\(str, Enum\):\n((?:[ \t]+.*\n|\n)+)", re.MULTILINE)
_MEMBER = re.compile(r"^\s+[A-Z0-9_]+\s*=\s*\"([^\"]+)\"", re.MULTILINE)


@dataclass(frozen=True)
class Route:
    """``known``: True (litellm routes it), False (it cannot), None (unsure: ask litellm).
    ``provider``: the provider when known."""

    known: bool | None
    provider: str | None = None


UNSURE = Route(None)


@functools.lru_cache(maxsize=1)
def _litellm_folder() -> Path | None:
    """litellm's package folder, found without importing it (None when it is not installed)."""
    spec = importlib.util.find_spec("litellm")
    locations = list(spec.submodule_search_locations or ()) if spec else []
    return Path(locations[0]) if locations else None


@functools.lru_cache(maxsize=1)
def providers() -> frozenset[str]:
    """litellm's provider prefixes: ``litellm.provider_list`` and its JSON-configured providers."""
    folder = _litellm_folder()
    if folder is None:
        return frozenset()
    try:
        enum = _ENUM.search((folder / "types" / "utils.py").read_text(encoding="utf-8"))
        found = set(_MEMBER.findall(enum.group(1))) if enum else set()
        registry = folder / "llms" / "openai_like" / "providers.json"
        if registry.is_file():
            found.update(json.loads(registry.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return frozenset()
    return frozenset(found)


@functools.lru_cache(maxsize=1)
def cost_map() -> dict[str, dict]:
    """litellm's local model cost map (the one it uses offline): model name -> its facts."""
    folder = _litellm_folder()
    try:
        return json.loads((folder / "model_prices_and_context_window_backup.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError):
        return {}


def route(model: str) -> Route:
    """Where litellm sends ``model``, as far as its data files tell; :data:`UNSURE` otherwise."""
    if os.environ.get("USE_LITELLM_PROXY") or not providers():
        return UNSURE  # litellm's proxy takes every model; or litellm's files are not where expected
    prefix, slash, _rest = model.partition("/")
    if slash and prefix in providers():
        return UNSURE if prefix == "azure" else Route(True, prefix)  # azure/ may go to openai
    entry = cost_map().get(model)
    if isinstance(entry, dict) and entry.get("litellm_provider"):
        return Route(True, str(entry["litellm_provider"]))
    if slash and ":" not in model and cost_map():
        return Route(False)  # no provider has this prefix, and the cost map does not list the model
    return UNSURE


def missing_variables(provider: str) -> tuple[str, ...] | None:
    """The key variables ``provider`` lacks here ((): none), or None when this table does not know it."""
    names = KEY_VARIABLES.get(provider)
    if names is None:
        return None
    return () if any(is_set(name) for name in names) else names[:1]

"""Before any run: can litellm route a real model, and does it have the API key(s) it needs?"""

from __future__ import annotations

import functools

from pytest_mlab.llm.litellm_provider import load_litellm


@functools.lru_cache(maxsize=None)
def missing_keys(model: str) -> tuple[str, ...]:
    """Environment variables litellm needs for ``model`` that are not set (imports litellm)."""
    litellm = load_litellm()
    try:
        status = litellm.validate_environment(model=model)
    except Exception:  # litellm cannot tell for this model: let the call itself report problems
        return ()
    return tuple(status.get("missing_keys") or ())


def missing_key_reason(model: str) -> str | None:
    """A skip reason naming the variable(s) to set, or None when nothing is missing."""
    missing = missing_keys(model)
    if not missing:
        return None
    return (f"model '{model}' needs the environment variable {', '.join(missing)}: export {missing[0]}=... "
            f"(or run without a key: --llm=scripted:FILE, or --llm=replay:TRACE)")


@functools.lru_cache(maxsize=None)
def unknown_model_reason(model: str) -> str | None:
    """Why litellm cannot route ``model`` (imports litellm), or None when it can. Every run of such
    a model would fail at its first call, so this is said once, before any run."""
    litellm = load_litellm()
    try:
        litellm.get_llm_provider(model)
    except Exception:
        return (f"litellm cannot tell which provider serves the model '{model}': name it with its provider, e.g. "
                f"openai/{model.split('/')[-1]} or anthropic/{model.split('/')[-1]} "
                f"(providers: https://docs.litellm.ai/docs/providers)")
    return None

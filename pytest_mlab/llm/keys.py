"""Before any run: does a real model have the API key(s) it needs? litellm knows which variables."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=None)
def missing_keys(model: str) -> tuple[str, ...]:
    """Environment variables litellm needs for ``model`` that are not set (imports litellm)."""
    import litellm

    litellm.suppress_debug_info = True
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

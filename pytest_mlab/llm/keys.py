"""Before any run: can litellm route a real model, and does it have the API key(s) it needs?

Asked once per session, by the process that starts it (plugin/model_checks.py hands the answers
to pytest-xdist workers). litellm's data files answer the usual models (:mod:`routing`); litellm
itself is imported only for the others."""

from __future__ import annotations

from pytest_mlab.llm import routing


def missing_keys(model: str) -> tuple[str, ...]:
    """Environment variables litellm needs for ``model`` that are not set."""
    known = routing.route(model)
    if known.provider is not None:
        missing = routing.missing_variables(known.provider)
        if missing is not None:
            return missing
    from pytest_mlab.llm.litellm_provider import load_litellm

    try:
        status = load_litellm().validate_environment(model=model)
    except Exception:  # litellm cannot tell for this model: let the call itself report problems
        return ()
    from pytest_mlab.llm.secrets import is_set

    # litellm looks in os.environ only: a key the harness took out of it (secrets.py) is not missing
    return tuple(name for name in status.get("missing_keys") or () if not is_set(name))


def missing_key_reason(model: str) -> str | None:
    """A skip reason naming the variable(s) to set, or None when nothing is missing."""
    missing = missing_keys(model)
    if not missing:
        return None
    return (f"model '{model}' needs the environment variable {', '.join(missing)}: export {missing[0]}=... "
            f"(or run without a key: --llm=scripted:FILE, or --llm=replay:TRACE)")


def unknown_model_reason(model: str) -> str | None:
    """Why litellm cannot route ``model``, or None when it can. Every run of such a model would fail
    at its first call, so this is said once, before any run."""
    known = routing.route(model).known
    if known is None:
        from pytest_mlab.llm.litellm_provider import load_litellm

        try:
            load_litellm().get_llm_provider(model)
            known = True
        except Exception:
            known = False
    if known:
        return None
    return (f"litellm cannot tell which provider serves the model '{model}': name it with its provider, e.g. "
            f"openai/{model.split('/')[-1]} or anthropic/{model.split('/')[-1]} "
            f"(providers: https://docs.litellm.ai/docs/providers)")


def model_problem(model: str) -> str | None:
    """Why runs of the litellm model ``model`` cannot start here (unknown, or a key is missing), or None."""
    return unknown_model_reason(model) or missing_key_reason(model)

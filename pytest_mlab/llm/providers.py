"""Pick a provider by its model string, and say before a run why a model cannot be used here.

``scripted:FILE|DIR`` -> :mod:`scripted`, ``replay:TRACE`` -> :mod:`replay`, ``human`` ->
:mod:`human`, a prefix that a plugin added (:func:`add_providers`) -> its factory, anything else
is a litellm model name (:mod:`litellm_provider`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from pytest_mlab.errors import UsageError
from pytest_mlab.llm import replay, scripted
from pytest_mlab.llm.provider import Provider

HUMAN = "human"
ProviderFactory = Callable[..., Provider]  # factory(model, task=...) -> Provider
_ADDED: dict[str, ProviderFactory] = {}  # model-string prefix -> factory, from plugins


def add_providers(factories: Mapping[str, ProviderFactory]) -> Callable[[], None]:
    """Providers from plugins (the ``pytest_mlab_llm_providers`` hook), by the prefix of the model
    strings they answer. Returns what removes them again."""
    for prefix, factory in factories.items():
        if not isinstance(prefix, str) or not prefix.strip():
            raise UsageError(f"LLM provider prefix {prefix!r}: expected a non-empty string such as 'echo:'")
        if _built_in(prefix) or prefix in _ADDED:
            raise UsageError(f"LLM provider prefix '{prefix}' is already taken; give the added provider another")
        if not callable(factory):
            raise UsageError(f"LLM provider '{prefix}': expected a factory, not {type(factory).__name__}")
    _ADDED.update(factories)

    def remove() -> None:
        for prefix in factories:
            _ADDED.pop(prefix, None)

    return remove


def _built_in(model: str) -> bool:
    return model == HUMAN or model.startswith((scripted.PREFIX, replay.PREFIX))


def _added(model: str) -> ProviderFactory | None:
    """The factory of the longest added prefix that ``model`` starts with (built-ins come first)."""
    if _built_in(model):
        return None
    prefix = max((prefix for prefix in _ADDED if model.startswith(prefix)), key=len, default=None)
    return _ADDED[prefix] if prefix is not None else None


def resolve_paths(model: str, base: Path | None) -> str:
    """``scripted:rel/path`` -> ``scripted:/abs/rel/path`` against ``base``; other models unchanged."""
    for prefix in (scripted.PREFIX, replay.PREFIX):
        if model.startswith(prefix) and base is not None:
            return prefix + str((base / Path(model[len(prefix):]).expanduser()).resolve())
    return model


def resolve_models(models: Mapping[str, str], base: Path | None) -> dict[str, str]:
    """Role models as typed, with the files of ``scripted:`` and ``replay:`` made absolute against
    the folder pytest was started in (``base``); the typed names stay in ids and results."""
    return {role: resolve_paths(model, base) for role, model in models.items()}


def make_provider(model: str, *, task: str, console: Any = None, attempts: int = 5) -> Provider:
    if model.startswith(scripted.PREFIX):
        return scripted.ScriptedProvider(scripted.script_file(model[len(scripted.PREFIX):], task))
    if model.startswith(replay.PREFIX):
        return replay.ReplayProvider(Path(model[len(replay.PREFIX):]).expanduser())
    if model == HUMAN:
        from pytest_mlab.llm.human import Console, HumanProvider

        return HumanProvider(console or Console())
    added = _added(model)
    if added is not None:
        return added(model, task=task)
    from pytest_mlab.llm.litellm_provider import LiteLLMProvider

    return LiteLLMProvider(attempts=attempts)


def make_providers(models: Mapping[str, str], **kwargs: Any) -> dict[str, Provider]:
    """One provider per distinct model string, so roles naming the same script or trace share it."""
    return {model: make_provider(model, **kwargs) for model in dict.fromkeys(models.values())}


def via_litellm(model: str) -> bool:
    """Whether ``model`` goes to litellm (neither a built-in offline provider nor a plugin's)."""
    return not _built_in(model) and _added(model) is None


def unavailable(models: Mapping[str, str], task: str, base: Path | None = None,
                check: Callable[[str], str | None] | None = None) -> str | None:
    """Why these role models cannot run ``task`` here (a skip reason naming the fix), or None.
    ``check``: what says why a litellm model cannot be used (default: ask now, :func:`keys.model_problem`);
    a session passes answers it got once, before any worker started."""
    for model in dict.fromkeys(resolve_models(models, base).values()):
        if model.startswith(scripted.PREFIX):
            reason = scripted.unavailable(model[len(scripted.PREFIX):], task)
        elif model.startswith(replay.PREFIX):
            reason = replay.unavailable(model[len(replay.PREFIX):], task)
        elif not via_litellm(model):
            reason = None
        else:
            if check is None:
                from pytest_mlab.llm.keys import model_problem as check
            reason = check(model)
        if reason:
            return reason
    return None


def unroutable(model: str) -> str | None:
    """Why a model typed on the command line can never be called (a usage error), or None: offline
    and plugin-added providers always can; litellm must know the provider of the rest."""
    if not via_litellm(model):
        return None
    from pytest_mlab.llm.keys import unknown_model_reason

    return unknown_model_reason(model)

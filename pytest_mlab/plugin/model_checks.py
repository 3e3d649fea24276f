"""Whether the session's real models can be called here (litellm knows them, their keys are set),
asked once by the process that starts the session and handed to pytest-xdist workers, so that
no worker asks again (asking may import litellm: seconds of CPU in each process).

A model typed with --llm, --fast-llm or --edit-llm that cannot be called is a usage error before
any worker starts; a model an agent spec names makes that agent's items skip, naming the fix."""

from __future__ import annotations

from typing import Any, Callable

import pytest

from pytest_mlab.errors import MlabError, SpecError, UsageError
from pytest_mlab.plugin.state import SETTINGS, project_of

#: model -> why it cannot be called here, or None: this process's answers, asked or handed over
ANSWERS = pytest.StashKey[dict]()
#: the key of the answers in a worker's ``workerinput``
WORKER_KEY = "mlab_model_checks"


def model_check(config: pytest.Config) -> Callable[[str], str | None]:
    """Why a litellm model cannot be called here, or None; each model is asked once per session
    (on a worker: answered from what the controller handed over)."""
    if ANSWERS not in config.stash:
        config.stash[ANSWERS] = dict(getattr(config, "workerinput", {}).get(WORKER_KEY, {}))
    answers = config.stash[ANSWERS]

    def check(model: str) -> str | None:
        if model not in answers:
            from pytest_mlab.llm.keys import model_problem

            answers[model] = model_problem(model)
        return answers[model]

    return check


def session_models(config: pytest.Config) -> list[str]:
    """The litellm models the roles of the session's agents name (an agent whose spec is broken
    names none: its error is reported when specs are collected)."""
    from pytest_mlab.llm.providers import via_litellm
    from pytest_mlab.plugin.items import session_agents
    from pytest_mlab.spec.plan import role_models

    settings, project = config.stash[SETTINGS], project_of(config)
    models: dict[str, None] = {}
    for name in session_agents(settings, project):
        try:
            agent = project.agent(name, wanted_by=(settings.agents_source, None, ""))
        except SpecError:
            continue
        models.update((model, None) for model in role_models(agent, settings).values() if via_litellm(model))
    return list(models)


def check_typed_models(config: pytest.Config) -> None:
    """A typed model litellm cannot route, or one an agent of the session calls without its key,
    is a :class:`UsageError` naming the option and what to do."""
    settings = config.stash[SETTINGS]
    typed = [(option, model) for option, model in (("--llm", settings.llm), ("--fast-llm", settings.fast_llm),
                                                   ("--edit-llm", settings.edit_llm)) if model]
    if not typed:
        return
    from pytest_mlab.llm.providers import unroutable

    for option, model in typed:
        reason = unroutable(model)
        if reason:
            raise UsageError(f"{option}={model}: {reason}")
    used, check = session_models(config), model_check(config)
    for option, model in typed:
        reason = check(model) if model in used else None
        if reason:
            raise UsageError(f"{option}={model}: {reason}")


def hand_over(config: pytest.Config, workerinput: dict[str, Any]) -> None:
    """Put this session's answers into a starting worker's ``workerinput`` (asked once, for all
    workers). Specs that cannot be read hand nothing over: the workers report them when they collect."""
    check = model_check(config)
    try:
        workerinput[WORKER_KEY] = {model: check(model) for model in session_models(config)}
    except MlabError:
        workerinput[WORKER_KEY] = {}

"""One-line notices printed before the first run, for what the user asked for that will not happen."""

from __future__ import annotations

import pytest

from pytest_mlab.errors import MlabError
from pytest_mlab.plugin.options import llm_options_given
from pytest_mlab.plugin.state import SETTINGS, project_of


def unused_llm_notice(config: pytest.Config) -> str | None:
    """``--llm`` (or ``--fast-llm``, ``--edit-llm``) given while no selected agent calls a model:
    the session would run exactly as without it, which a user who meant to test a model must hear."""
    given = llm_options_given(config)
    if not given:
        return None
    from pytest_mlab.plugin.items import session_agents

    project = project_of(config)
    try:
        names = session_agents(config.stash[SETTINGS], project)
        if any(project.agent(name).uses_llm for name in names):
            return None
    except MlabError:
        return None  # a broken agent spec: collection reports it, with its file and line
    others = [name for name in project.agents.names() if _uses_llm(project, name)]
    hint = f"add one that does, e.g. --agent={others[0]}" if others else "no agent of this project uses one"
    return f"pytest-mlab: {' '.join(given)} is ignored: no selected agent uses an LLM ({', '.join(names)}); {hint}"


def _uses_llm(project, name: str) -> bool:
    try:
        return project.agent(name).uses_llm
    except MlabError:
        return False


def missing_baseline_notice(items: list[pytest.Item]) -> str | None:
    """Tasks collected for a data variant they have, but with no baseline for it: their runs are
    skipped, which the user should hear once, with the command that measures them all."""
    missing = {item.plan.task.name: item.plan.variant for item in items
               if item.plan.variant in item.plan.task.data and item.plan.baseline is None}
    if not missing:
        return None
    names = " ".join(sorted(missing))
    variant = next(iter(missing.values()))  # one session, one data variant
    return (f"pytest-mlab: no '{variant}' baseline yet for {len(missing)} task(s): {names}; their runs are skipped "
            f"(each is graded against it). Measure them: `pytest-mlab baseline {names} --data {variant} --write`")

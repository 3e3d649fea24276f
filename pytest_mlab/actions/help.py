"""Request Help: ask the human watching the run (``--llm=human`` runs only)."""

from __future__ import annotations

from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError


def request_help(ctx: ActionContext, request: str) -> str:
    if ctx.human is None:
        raise EnvError("no human is present in this run, so nobody can answer; work it out from the files "
                       "and the output of your scripts")
    answer = str(ctx.human(request)).strip()
    return f"A human answered:\n{answer}" if answer else "The human gave no answer."

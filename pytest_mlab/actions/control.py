"""Actions that steer the run rather than touch files."""

from __future__ import annotations

from pytest_mlab.env.context import ActionContext


def final_answer(ctx: ActionContext, final_answer: str) -> str:
    return "Final answer submitted; the run ends here and the workspace will be graded."

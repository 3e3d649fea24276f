"""What the results layer does around one run on the worker that runs it: reuse a finished run
(--mlab-resume), refuse to start past the budget (--mlab-max-cost), and afterwards grade its
steps (--mlab-score-steps) and book its cost."""

from __future__ import annotations

from dataclasses import replace

from pytest_mlab.errors import MlabError
from pytest_mlab.results.budget import Ledger, over_budget
from pytest_mlab.results.record import RunResult
from pytest_mlab.results.regrade import saved_step_scores, score_steps
from pytest_mlab.results.resume import finished_result
from pytest_mlab.spec.plan import RunPlan, Settings


def resumed(plan: RunPlan, nodeid: str, settings: Settings) -> RunResult | None:
    if not settings.resume:
        return None
    result = finished_result(plan.run_dir, plan.run_id, nodeid)
    if result is not None and result.best_improvement is None:
        scores = saved_step_scores(plan.run_dir)
        if scores:
            result = replace(result, best_improvement=scores.get("best_improvement"))
    return result


def budget_stop(settings: Settings) -> str | None:
    """The skip reason when the session's LLM budget is spent."""
    return over_budget(Ledger(settings.out_dir), settings.max_cost)


def after_run(plan: RunPlan, result: RunResult, settings: Settings) -> RunResult:
    if settings.max_cost is not None:
        Ledger(settings.out_dir).add(plan.run_id, result.cost)
    if settings.score_steps and result.trace:
        from pytest_mlab.data import prepare_data
        from pytest_mlab.sandbox.base import SandboxOptions

        try:
            data = prepare_data(plan.task, plan.variant, plan.cache_dir)
            scores = score_steps(plan.task, plan.run_dir, data, plan.baseline, sandbox=plan.sandbox,
                                 options=SandboxOptions.for_task(plan.task, plan.limits, plan.run_id))
        except MlabError:
            return result  # the run stands as graded; only the curve is missing
        result = replace(result, best_improvement=scores["best_improvement"])
    return result

"""Aggregate run results the way the paper reports them: per (task, agent, llm, variant) and per agent.

Success rates carry a 95% Wilson interval, which stays inside [0, 1] and is honest for the
handful of seeds a benchmark run can afford (the normal approximation is not). They come three
ways: over all runs; over the runs that did not fail for infrastructure reasons (provider
errors, a dead worker, the sandbox, Ctrl-C); and by the paper's rule (``paper_*``), which drops
the runs the original's plot.py drops (results/paper.py): a time-out or crash too, and keeps the
errored runs of the GPT-4 research agents as failures. The second is ours; the third is there to
compare with the paper's numbers.

The baseline agent (``expect: baseline``) runs the unchanged starter: it is the reference that
improvement is measured from, so it cannot succeed by definition. Its rows carry ``expect``
and ``passed`` (its items check the baseline), which the tables show instead of a rate. Against a
pinned baseline (a placeholder such as fathomnet's 1e-10, not a measurement) its improvement
means nothing and is left out of the means.

An agent's headline, the paper's "average success rate", averages its tasks tagged ``paper``
(the 13 tasks the paper scores by success); smoke tasks, the LLM-tool tasks and a project's own
tasks are averaged apart. Without any ``paper`` task among the runs, the headline covers all tasks.

Improvement across tasks is summarised by its median. The paper never averages improvement over
tasks (its figure is per task), and against a pinned placeholder (fathomnet's 1e-10) the paper's
formula gives improvements of 10^11 %, which would be the whole of any mean; the mean is kept in
the JSON for completeness.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from pytest_mlab.results.paper import paper_count
from pytest_mlab.results.record import RunResult

PAPER_TAG = "paper"
#: The ``expect`` of the baseline agent's runs: the starter's score, never success (no rate to show).
BASELINE_EXPECT = "baseline"
GROUP_KEYS = ("task", "agent", "llm", "variant")
AGENT_KEYS = ("agent", "llm", "variant")
Z_95 = 1.959963984540054


def wilson_interval(successes: int, runs: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval; (0, 1) when there are no runs (nothing is known)."""
    if runs <= 0:
        return 0.0, 1.0
    rate = successes / runs
    denominator = 1 + z * z / runs
    centre = (rate + z * z / (2 * runs)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / runs + z * z / (4 * runs * runs)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact ends; float rounding is not a result
    high = 1.0 if successes == runs else min(1.0, centre + half)
    return low, high


def _finite(values: Iterable[float | None]) -> list[float]:
    """The values that are numbers (a baseline of 0 gives an infinite gain, a missing one None)."""
    return [float(value) for value in values if value is not None and math.isfinite(value)]


def _mean(values: Iterable[float | None]) -> float | None:
    """Mean of the finite values; None when there are none."""
    finite = _finite(values)
    return sum(finite) / len(finite) if finite else None


def _median(values: Iterable[float | None]) -> float | None:
    """Median of the finite values; None when there are none."""
    finite = _finite(values)
    return statistics.median(finite) if finite else None


def group_key(run: RunResult | dict[str, Any], keys: tuple[str, ...] = GROUP_KEYS) -> tuple:
    data = run if isinstance(run, dict) else run.to_dict()
    return tuple(data.get(key) for key in keys)


def measured_improvement(run: RunResult, value: float | None) -> float | None:
    """``value`` (an improvement of ``run``), or None where it measures nothing: the baseline
    agent's against a pinned baseline (fathomnet's starter scores 0 against the placeholder 1e-10:
    -100% says nothing about the starter, which is the baseline)."""
    return None if run.expect == BASELINE_EXPECT and run.baseline_pinned else value


def summarize(runs: list[RunResult]) -> dict[str, Any]:
    """One group's numbers (the same fields whatever the group)."""
    n = len(runs)
    successes = sum(1 for run in runs if run.success)
    low, high = wilson_interval(successes, n)
    failures = Counter(run.failure for run in runs if run.failure)
    harness = Counter(run.failure for run in runs if run.failure and run.infrastructure)
    infrastructure = sum(1 for run in runs if run.infrastructure)
    agent_runs = n - infrastructure
    counted = [count for count in map(paper_count, runs) if count.counted]
    paper_successes = sum(1 for count in counted if count.success)
    paper_low, paper_high = wilson_interval(paper_successes, len(counted))
    return {
        "runs": n, "successes": successes, "success_rate": successes / n if n else None,
        "ci_low": low, "ci_high": high, "infrastructure_failures": infrastructure,
        "success_rate_excluding_infrastructure": successes / agent_runs if agent_runs else None,
        "paper_runs": len(counted), "paper_successes": paper_successes,
        "paper_success_rate": paper_successes / len(counted) if counted else None,
        "paper_ci_low": paper_low, "paper_ci_high": paper_high, "paper_dropped": n - len(counted),
        "expect": _expect(run.expect for run in runs), "passed": sum(1 for run in runs if run.passed),
        "baseline_pinned": any(run.baseline_pinned for run in runs),
        "valid_rate": sum(1 for run in runs if run.valid) / n if n else None,
        "mean_improvement": _mean(measured_improvement(run, run.improvement) for run in runs if run.valid),
        "best_step_improvement": _mean(measured_improvement(run, run.best_improvement) for run in runs),
        "mean_score": _mean(run.score for run in runs if run.valid),
        "mean_tokens": _mean(run.tokens for run in runs), "mean_cost": _mean(run.cost for run in runs),
        "total_cost": sum(run.cost or 0.0 for run in runs), "mean_wall_time": _mean(run.wall_time for run in runs),
        "mean_steps": _mean(run.steps for run in runs), "failures": dict(sorted(failures.items())),
        # of those, the failures of the harness (or Ctrl-C), not the agent's: a crash can be either
        "harness_failures": dict(sorted(harness.items())),
    }


def aggregate(runs: list[RunResult]) -> dict[str, Any]:
    """``groups``: one row per (task, agent, llm, variant); ``agents``: per (agent, llm, variant), the
    paper's headline (success rate averaged over tasks, each task weighted equally)."""
    groups = []
    for key, members in _by_group(runs):
        first = members[0]
        groups.append({**dict(zip(GROUP_KEYS, key)), "metric": first.metric, "direction": first.direction,
                       "paper": PAPER_TAG in (first.tags or ()), **summarize(members)})
    by_agent: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for group in groups:
        by_agent[group_key(group, AGENT_KEYS)].append(group)
    agents = []
    for key in sorted(by_agent, key=_sort_key):
        rows = by_agent[key]
        agent_runs = [run for run in runs if group_key(run, AGENT_KEYS) == key]
        paper = [row for row in rows if row["paper"]]
        headline, others = (paper, [row for row in rows if not row["paper"]]) if paper else (rows, [])
        agents.append({**dict(zip(AGENT_KEYS, key)), "tasks": len(rows), "runs": len(agent_runs),
                       "headline_tasks": "paper" if paper else "all", "paper_tasks": len(paper),
                       "average_success_rate": _mean(row["success_rate"] for row in headline),
                       "average_success_rate_excluding_infrastructure": _mean(
                           row["success_rate_excluding_infrastructure"] for row in headline),
                       "paper_average_success_rate": _mean(row["paper_success_rate"] for row in headline),
                       "paper_dropped": sum(row["paper_dropped"] for row in rows),
                       "expect": _expect(row["expect"] for row in rows),
                       "median_improvement": _median(row["mean_improvement"] for row in headline),
                       "average_improvement": _mean(row["mean_improvement"] for row in headline),
                       "other_tasks": len(others),
                       "other_average_success_rate": _mean(row["success_rate"] for row in others),
                       "infrastructure_failures": sum(1 for run in agent_runs if run.infrastructure),
                       "mean_tokens": _mean(run.tokens for run in agent_runs),
                       "total_cost": sum(run.cost or 0.0 for run in agent_runs)})
    return {"groups": groups, "agents": agents}


def _expect(expects: Iterable[str]) -> str:
    """What a group's or an agent's items assert: ``baseline``, ``success``, or ``mixed``."""
    distinct = set(expects)
    return distinct.pop() if len(distinct) == 1 else "mixed"


def metric_spread(runs: list[RunResult]) -> list[dict[str, Any]]:
    """The raw metric per (task, agent, llm, variant) over its valid submissions: ``scored`` of
    ``runs`` were scored; their mean, sample standard deviation (None below 2), min and max."""
    rows = []
    for key, members in _by_group(runs):
        scores = _finite(run.score for run in members if run.valid)
        mean = _mean(scores)
        std = math.sqrt(sum((score - mean) ** 2 for score in scores) / (len(scores) - 1)) if len(scores) > 1 else None
        rows.append({**dict(zip(GROUP_KEYS, key)), "metric": members[0].metric, "direction": members[0].direction,
                     "baseline": members[0].baseline, "runs": len(members), "scored": len(scores), "mean": mean,
                     "std": std, "min": min(scores, default=None), "max": max(scores, default=None)})
    return rows


def _by_group(runs: list[RunResult]) -> list[tuple[tuple, list[RunResult]]]:
    """The runs of each (task, agent, llm, variant), in the tables' order."""
    grouped: dict[tuple, list[RunResult]] = defaultdict(list)
    for run in runs:
        grouped[group_key(run)].append(run)
    return [(key, grouped[key]) for key in sorted(grouped, key=_sort_key)]


def _sort_key(key: tuple) -> tuple:
    return tuple("" if part is None else str(part) for part in key)


def agent_label(row: dict[str, Any]) -> str:
    """``research (gpt-4)`` for LLM-driven agents, the bare name otherwise."""
    return f"{row['agent']} ({row['llm']})" if row.get("llm") else str(row["agent"])

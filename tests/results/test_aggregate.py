"""Aggregation and Wilson intervals on constructed results."""

from __future__ import annotations

import math

import pytest

from pytest_mlab.results.aggregate import aggregate, metric_spread, wilson_interval
from tests.results.builders import run, seeds


@pytest.mark.parametrize("successes, runs, low, high", [
    (5, 10, 0.2366, 0.7634),   # textbook values
    (0, 8, 0.0, 0.3244),       # all failures: the interval still says "up to a third"
    (8, 8, 0.6756, 1.0),
    (1, 1, 0.2065, 1.0),
])
def test_wilson_interval_matches_reference_values(successes, runs, low, high):
    got = wilson_interval(successes, runs)
    assert got == pytest.approx((low, high), abs=1e-4)


def test_wilson_interval_without_runs_knows_nothing():
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_no_runs_give_no_groups():
    assert aggregate([]) == {"groups": [], "agents": []}


def test_groups_by_task_agent_llm_and_variant():
    runs = seeds(3, 4) + [run(agent="research", llm="gpt-4"), run(agent="research", llm="claude")]
    groups = aggregate(runs)["groups"]
    assert [(g["agent"], g["llm"], g["runs"]) for g in groups] == [
        ("reference", None, 4), ("research", "claude", 1), ("research", "gpt-4", 1)]
    reference = groups[0]
    assert reference["successes"] == 3 and reference["success_rate"] == 0.75
    assert reference["ci_low"] < 0.75 < reference["ci_high"]


def test_all_failures():
    runs = [run(seed=i, success=False, passed=False, valid=False, score=None, improvement=None,
                failure="invalid submission") for i in range(3)]
    group = aggregate(runs)["groups"][0]
    assert group["success_rate"] == 0.0 and group["ci_low"] == 0.0 and group["ci_high"] > 0.4
    assert group["mean_improvement"] is None and group["valid_rate"] == 0.0
    assert group["failures"] == {"invalid submission": 3}


def test_mean_improvement_counts_valid_submissions_of_lower_is_better_tasks():
    # improvements are direction-aware already: for MAE 40 vs baseline 50 the run stores +0.2
    runs = [run("house-price", seed=0, metric="mae", direction="minimize", score=40.0, baseline=50.0, improvement=0.2),
            run("house-price", seed=1, metric="mae", direction="minimize", score=60.0, baseline=50.0, improvement=-0.2,
                success=False),
            run("house-price", seed=2, metric="mae", direction="minimize", score=None, valid=False, improvement=None,
                success=False),
            run("house-price", seed=3, metric="mae", direction="minimize", score=0.0, baseline=0.0,
                improvement=math.inf)]
    group = aggregate(runs)["groups"][0]
    assert group["direction"] == "minimize"
    assert group["mean_improvement"] == pytest.approx(0.0)  # +0.2 and -0.2; the infinite gain is left out
    assert group["mean_score"] == pytest.approx((40 + 60 + 0) / 3)
    assert group["runs"] == 4 and group["successes"] == 2


def test_tokens_cost_time_and_best_step():
    runs = [run(seed=0, tokens=1000, cost=0.5, wall_time=10.0, best_improvement=0.7),
            run(seed=1, tokens=3000, cost=1.5, wall_time=30.0, best_improvement=None)]
    group = aggregate(runs)["groups"][0]
    assert group["mean_tokens"] == 2000 and group["mean_cost"] == 1.0 and group["total_cost"] == 2.0
    assert group["mean_wall_time"] == 20.0 and group["best_step_improvement"] == 0.7


def test_agent_headline_averages_success_over_tasks_not_runs():
    # 4 of 4 on digits, 0 of 1 on diabetes: per run that is 80%, the paper's average over tasks is 50%
    runs = seeds(4, 4) + [run("diabetes", success=False, passed=False)]
    agents = aggregate(runs)["agents"]
    assert len(agents) == 1
    assert agents[0]["tasks"] == 2 and agents[0]["runs"] == 5
    assert agents[0]["average_success_rate"] == pytest.approx(0.5)


def test_the_headline_covers_the_paper_tasks_and_averages_the_others_apart():
    paper = [*seeds(1, 2, task="cifar10", tags=["paper"]), *seeds(0, 2, task="imdb", tags=["paper"])]
    smoke = seeds(2, 2, task="digits", tags=["smoke"])
    tool = seeds(2, 2, task="bibtex-generation", tags=["llm-tool"])
    (agent,) = aggregate([*paper, *smoke, *tool])["agents"]
    assert (agent["tasks"], agent["paper_tasks"], agent["headline_tasks"]) == (4, 2, "paper")
    assert agent["average_success_rate"] == 0.25  # (1/2 + 0/2) / 2: the smoke and tool tasks' 100% stay out
    assert (agent["other_tasks"], agent["other_average_success_rate"]) == (2, 1.0)


def test_without_paper_tasks_the_headline_covers_every_task():
    (agent,) = aggregate([*seeds(1, 2, task="a"), *seeds(2, 2, task="b")])["agents"]
    assert (agent["headline_tasks"], agent["average_success_rate"], agent["other_tasks"]) == ("all", 0.75, 0)
    assert agent["other_average_success_rate"] is None


def test_infrastructure_failures_are_counted_apart_and_left_out_of_the_papers_denominator():
    runs = [*seeds(1, 3, task="a", tags=["paper"]),
            run(task="a", seed=3, success=False, passed=False, infrastructure=True, failure="crashed", tags=["paper"])]
    (group,) = aggregate(runs)["groups"]
    assert group["success_rate"] == 0.25 and group["infrastructure_failures"] == 1
    assert group["success_rate_excluding_infrastructure"] == 1 / 3
    (agent,) = aggregate(runs)["agents"]
    assert agent["average_success_rate"] == 0.25 and agent["average_success_rate_excluding_infrastructure"] == 1 / 3
    assert agent["infrastructure_failures"] == 1
    only_infra = aggregate([run(task="b", success=False, infrastructure=True, failure="crashed")])["groups"][0]
    assert only_infra["success_rate_excluding_infrastructure"] is None  # no run said anything about the agent


def test_the_raw_metric_spread_covers_the_valid_submissions_of_each_group():
    runs = [run(seed=0, score=0.8), run(seed=1, score=0.9), run(seed=2, score=1.0),
            run(seed=3, score=None, valid=False, improvement=None),
            run("diabetes", "baseline", metric="mae", direction="minimize", baseline=57.0, score=57.5)]
    diabetes, digits = metric_spread(runs)
    assert (digits["task"], digits["agent"], digits["metric"], digits["baseline"]) == ("digits", "reference", "accuracy", 0.6)
    assert (digits["runs"], digits["scored"]) == (4, 3)
    assert digits["mean"] == pytest.approx(0.9) and digits["std"] == pytest.approx(0.1)  # sample deviation
    assert (digits["min"], digits["max"]) == (0.8, 1.0)
    assert (diabetes["scored"], diabetes["mean"], diabetes["std"], diabetes["direction"]) == (1, 57.5, None, "minimize")
    (unscored,) = metric_spread([run(score=None, valid=False)])
    assert [unscored[key] for key in ("scored", "mean", "std", "min", "max")] == [0, None, None, None, None]


def test_improvement_over_tasks_is_a_median_that_a_placeholder_baseline_cannot_swamp():
    # fathomnet against its pinned 1e-10: the paper's formula gives +4e11 %, which would be the whole mean
    runs = [run("cifar10", improvement=0.2, tags=["paper"]), run("imdb", improvement=0.4, tags=["paper"]),
            run("fathomnet", improvement=4.1e9, tags=["paper"]),
            run("ogbn-arxiv", improvement=0.0, tags=["paper"], valid=False),  # no valid submission: not counted
            run("digits", improvement=5.0, tags=["smoke"])]  # not a paper task
    (agent,) = aggregate(runs)["agents"]
    assert agent["median_improvement"] == pytest.approx(0.4)  # of 0.2, 0.4 and 4.1e9
    assert agent["average_improvement"] == pytest.approx((0.2 + 0.4 + 4.1e9) / 3)
    (even,) = aggregate(runs[:2])["agents"]
    assert even["median_improvement"] == pytest.approx(0.3)


def test_the_papers_rate_drops_what_plot_py_drops_beside_ours():
    paper = {"task": "cifar10", "agent": "research", "llm": "claude-v1", "tags": ["paper"]}
    runs = [run(seed=0, **paper), run(seed=1, **paper),
            run(seed=2, end_reason="timeout", success=False, passed=False, failure="timeout", **paper),
            run(seed=3, end_reason="provider error", success=False, passed=False, failure="provider error",
                infrastructure=True, **paper),
            run(seed=4, log_errors=["CUDA out of memory"], **paper)]  # a success, but plot.py drops it
    (group,) = aggregate(runs)["groups"]
    assert (group["success_rate"], group["success_rate_excluding_infrastructure"]) == (0.6, 0.75)
    assert (group["paper_runs"], group["paper_successes"], group["paper_dropped"]) == (2, 2, 3)
    assert group["paper_success_rate"] == 1.0
    assert (group["paper_ci_low"], group["paper_ci_high"]) == pytest.approx(wilson_interval(2, 2))
    (agent,) = aggregate(runs)["agents"]
    assert (agent["paper_average_success_rate"], agent["paper_dropped"]) == (1.0, 3)


def test_the_papers_rate_is_unknown_when_it_drops_every_run():
    (group,) = aggregate([run(end_reason="crashed", success=False, passed=False, failure="crashed")])["groups"]
    assert (group["paper_runs"], group["paper_success_rate"], group["paper_dropped"]) == (0, None, 1)
    assert aggregate([run(end_reason="crashed", success=False)])["agents"][0]["paper_average_success_rate"] is None


def test_the_baseline_agents_rows_say_what_its_items_check():
    baseline = dict(agent="baseline", expect="baseline", success=False)
    runs = [run("diabetes", seed=0, improvement=0.001, **baseline),
            run("diabetes", seed=1, improvement=-0.001, passed=False, failure="baseline mismatch", **baseline),
            run("digits")]
    diabetes, digits = aggregate(runs)["groups"]
    assert (diabetes["expect"], diabetes["passed"], diabetes["runs"]) == ("baseline", 1, 2)
    assert (digits["expect"], digits["passed"]) == ("success", 1)
    assert [agent["expect"] for agent in aggregate(runs)["agents"]] == ["baseline", "success"]


def test_the_starters_improvement_over_a_pinned_placeholder_is_left_out():
    # fathomnet: the starter scores 0 against the paper's pinned 1e-10, which the formula calls -100%
    pinned = dict(task="fathomnet", score=0.0, baseline=1e-10, improvement=-1.0, success=False, tags=["paper"])
    starter = run(agent="baseline", expect="baseline", baseline_pinned=True, best_improvement=-1.0, **pinned)
    agent = run(agent="research", llm="gpt-4", baseline_pinned=True, **{**pinned, "improvement": 0.5})
    measured = run("diabetes", "baseline", expect="baseline", improvement=0.002, success=False)
    groups = {(row["task"], row["agent"]): row for row in aggregate([starter, agent, measured])["groups"]}
    fathomnet = groups["fathomnet", "baseline"]
    assert fathomnet["baseline_pinned"] and fathomnet["mean_improvement"] is None
    assert fathomnet["best_step_improvement"] is None
    assert groups["fathomnet", "research"]["mean_improvement"] == 0.5  # an agent's improvement stays the paper's
    assert groups["diabetes", "baseline"]["mean_improvement"] == 0.002  # a measured baseline: the reproduction's

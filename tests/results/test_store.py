"""results.json, results.csv and the terminal table from constructed results."""

from __future__ import annotations

import json

import pandas as pd

from pytest_mlab.results.record import RunResult
from pytest_mlab.results.store import render_table, write_results


def result(task: str = "digits", agent: str = "reference", **changes) -> RunResult:
    values = dict(nodeid=f"specs/tasks/{task}.yaml::{task}[mini-{agent}-s0]", run_id=f"{task}[mini-{agent}-s0]",
                  task=task, agent=agent, llm=None, seed=0, variant="mini", sandbox="local", metric="accuracy",
                  direction="maximize", expect="success", passed=True, score=0.97, baseline=0.6045,
                  improvement=0.6046, success=True, valid=True, invalid_reason=None, end_reason="final answer",
                  failure=None, message="accuracy 0.97 vs baseline 0.6045: +60.5%, needs > +10%", steps=3,
                  wall_time=16.2)
    values.update(changes)
    return RunResult(**values)


def test_results_json_and_csv_hold_every_run_in_node_id_order(tmp_path):
    runs = [result("vectorization"), result("diabetes", "baseline", expect="baseline"), result()]
    path = write_results(tmp_path, runs, {"seeds": 1, "agents": []})
    payload = json.loads(path.read_text())
    assert payload["version"] == 2 and payload["settings"] == {"seeds": 1, "agents": []}
    assert [group["task"] for group in payload["aggregate"]["groups"]] == ["diabetes", "digits", "vectorization"]
    assert [run["task"] for run in payload["runs"]] == ["diabetes", "digits", "vectorization"]
    assert RunResult.from_dict(payload["runs"][1]) == result()
    frame = pd.read_csv(tmp_path / "results.csv")
    assert list(frame["task"]) == ["diabetes", "digits", "vectorization"]
    assert list(frame.columns) == list(RunResult.__dataclass_fields__)


def test_the_table_shows_failures_llms_and_missing_scores():
    table = render_table([
        result(),
        result("digits", "research", llm="gpt-4", passed=False, success=False, score=None, improvement=None,
               valid=False, failure="invalid submission"),
        result("diabetes", "baseline", improvement=-1e-9, success=False),
    ])
    lines = table.splitlines()
    assert lines[0].split() == ["task", "agent", "seed", "score", "baseline", "improvement", "success", "steps",
                                "time", "result"]
    research = next(line for line in lines if "research" in line)
    assert "research (gpt-4)" in research and "FAIL: invalid submission" in research
    assert research.split()[4] == "-"  # no score
    baseline = next(line for line in lines if "baseline " in line and "diabetes" in line)
    assert "+0.0%" in baseline  # a rounding-size change is not shown as -0.0%
    assert "PASS" in next(line for line in lines if "reference" in line)


def test_from_dict_ignores_fields_it_does_not_know():
    data = {**result().to_dict(), "added_in_a_later_version": 1}
    assert RunResult.from_dict(data) == result()


def test_the_summary_shows_token_counts_as_whole_numbers():
    from pytest_mlab.results.store import render_summary

    runs = [result(seed=0, tokens=15426, llm="gpt-4"), result(seed=1, tokens=15434, llm="gpt-4")]
    summary = render_summary(runs)
    assert "15,430" in summary and "e+04" not in summary


def test_the_agents_summary_names_its_headline_tasks_and_the_median_improvement():
    from pytest_mlab.results.store import render_summary
    from tests.results.builders import run

    runs = [run("cifar10", improvement=0.2, tags=["paper"]), run("fathomnet", improvement=4.1e9, tags=["paper"]),
            run("imdb", improvement=0.4, tags=["paper"]), run("digits", success=False, improvement=0.0, tags=["smoke"])]
    agents = render_summary(runs).split("\n\n")[1].splitlines()
    header, (row,) = agents[0].split(), agents[1:]
    assert "median" in header and "average improvement" not in agents[0]
    assert "3 paper tasks" in row and "+40.0%" in row and "0.0% of 1" in row
    one = render_summary([run("cifar10", tags=["paper"])]).split("\n\n")[1]
    assert "1 paper task " in one and "tasks" not in one.splitlines()[1]


def test_the_summary_shows_the_papers_rule_beside_ours_and_says_what_it_drops():
    from pytest_mlab.results.store import render_summary
    from tests.results.builders import run

    paper = {"task": "cifar10", "tags": ["paper"]}
    runs = [run(agent="research", llm="claude-v1", seed=0, **paper),
            run(agent="research", llm="claude-v1", seed=1, end_reason="timeout", success=False, passed=False,
                failure="timeout", **paper),
            run(agent="research", llm="gpt-4", seed=0, **paper),
            run(agent="research", llm="gpt-4", seed=1, end_reason="timeout", success=False, passed=False,
                failure="timeout", **paper)]
    groups, agents, notes = render_summary(runs).split("\n\n")
    assert "paper rule" in groups.splitlines()[0]
    claude = next(line for line in groups.splitlines() if "claude" in line)
    gpt4 = next(line for line in groups.splitlines() if "gpt-4" in line)
    assert "50% [9%, 91%]" in claude and "100% of 1" in claude  # the time-out dropped
    assert "50% [9%, 91%]" in gpt4 and "50% of 2" in gpt4  # kept as a failure, as plot.py keeps GPT-4's
    assert agents.splitlines()[0].split().count("rule") == 1
    assert "100.0%" in next(line for line in agents.splitlines() if "claude" in line)
    assert "paper rule:" in notes and "1 run dropped here" in notes and "docs/fidelity.md" in notes
    assert "'headline over' tasks" in notes


def test_the_baseline_agent_shows_what_it_is_not_a_meaningless_rate():
    from pytest_mlab.results.store import render_summary
    from tests.results.builders import run

    baseline = dict(agent="baseline", expect="baseline", success=False, tags=["paper"])
    runs = [run("fathomnet", score=0.0, baseline=1e-10, improvement=-1.0, baseline_pinned=True, **baseline),
            run("diabetes", improvement=0.0, **baseline)]
    text = render_summary(runs)
    assert "0% [0%, 79%]" not in text and "-100" not in text
    groups, agents, notes = text.split("\n\n")
    fathomnet = next(line for line in groups.splitlines() if "fathomnet" in line)
    assert "n/a (baseline)" in fathomnet and "- (pinned)" in fathomnet
    assert "+0.0%" in next(line for line in groups.splitlines() if "diabetes" in line)
    assert "n/a (baseline)" in agents.splitlines()[1]
    assert "cannot succeed by definition" in notes and "placeholder" in notes
    table = render_table(runs)
    assert "-100" not in table and "- (pinned)" in next(line for line in table.splitlines() if "fathomnet" in line)
    assert all(" n/a " in line and " no " not in line for line in table.splitlines()[1:])  # the success column
    plain = render_summary([run()])
    assert "n/a" not in plain and "pinned" not in plain  # the notes come with what they explain

"""What the paper tasks' problem statements say and withhold, as the original's research problems
do (docs/fidelity.md, "problem statement" rows): the success bar is never stated, and the six
tasks whose original forbids reading the csv files directly say so too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mlab.spec.project import Project

ROOT = Path(__file__).resolve().parents[2]
SPECS = ROOT / "specs" / "tasks"
#: The original's research_problem.txt of these says "Never try to read any csv files directly."
NO_CSV_READING = {"house-price", "spaceship-titanic", "parkinsons-disease", "fathomnet", "feedback",
                  "identify-contrails"}
#: Ways a statement could give the bar away: a percentage, or the words of the success rule.
BAR = re.compile(r"\d+\s*%|percent|\bten\b|threshold|success", re.IGNORECASE)


def paper_tasks() -> list:
    project = Project(ROOT, ROOT / "specs" / "actions", ROOT / "agents", SPECS)
    tasks = [project.task_from_file(path) for path in sorted(SPECS.glob("*.yaml"))]
    return [task for task in tasks if "paper" in task.tags]


def test_the_paper_tasks_are_the_thirteen_of_the_headline():
    assert {task.name for task in paper_tasks()} == {
        "cifar10", "imdb", "ogbn-arxiv", "house-price", "spaceship-titanic", "parkinsons-disease", "fathomnet",
        "feedback", "identify-contrails", "clrs", "babylm", "llama-inference", "vectorization"}


@pytest.mark.parametrize("task", paper_tasks(), ids=lambda task: task.name)
def test_the_statement_never_states_the_success_bar(task):
    assert not BAR.search(task.description), BAR.search(task.description)


@pytest.mark.parametrize("task", paper_tasks(), ids=lambda task: task.name)
def test_the_statement_forbids_reading_csv_files_where_the_original_does(task):
    says = bool(re.search(r"\b(never|do not) read (the|any) csv files?\b", " ".join(task.description.split()),
                          re.IGNORECASE))
    assert says == (task.name in NO_CSV_READING)


NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five"}


@pytest.mark.parametrize("task", [task for task in paper_tasks() if task.metric.measure and
                                  task.metric.measure.timing_repeats], ids=lambda task: task.name)
def test_a_timed_tasks_starter_gives_its_rounds_and_slow_bound(task):
    """The rounds of the timing and the slow bound are part of the rule the agent is told, in the
    opening comment of the starter: the only file these tasks' originals ship."""
    from pytest_mlab.grading.timing import SLOW_BOUND, SLOW_GRACE_S

    details = " ".join((task.assets / "env" / task.starter).read_text().split())
    rounds = NUMBERS[task.metric.measure.timing_repeats]
    assert f"{rounds} times each" in details and f"(always {rounds} rounds)" in details
    assert f"more than {NUMBERS[int(SLOW_BOUND)]} times the original's" in details
    assert f"plus {SLOW_GRACE_S:.0f} s" in details and f"scores {SLOW_BOUND:.1f}" in details

"""plugin/schedule.py: runs go out to xdist workers longest first, from recorded times.

The scheduler is driven here as xdist's DSession drives it (add_node, add_node_collection,
schedule, mark_test_complete), with fake workers and a fake clock, so every decision is checked
exactly; a real ``-n 2`` session is in test_plugin_collection.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mlab.plugin.schedule import (LongestFirstScheduling, expected_lengths, longest_first_plan,
                                         recorded_durations)

RUNS = {"parkinsons": 6.3, "diabetes": 2.5, "house-price": 2.0, "spaceship": 1.8}


def nodeid(task: str) -> str:
    return f"specs/tasks/{task}.yaml::{task}[mini-baseline-s0]"


class FakeConfig:
    def __init__(self, workers: int) -> None:
        self.values = {"tx": [f"{workers}*popen"], "maxschedchunk": None}

    def getvalue(self, name: str):  # type: ignore[no-untyped-def]
        return self.values[name]

    getoption = getvalue


class FakeWorker:
    """What the scheduler may do to a worker: send it items, tell it to stop after them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.gateway = type("Gateway", (), {"id": name})()
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        assert not self.shutting_down, f"{self.name} got items after it was told to stop"
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return self.name


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def results_file(tmp_path: Path, durations: dict[str, float], **extra) -> Path:  # type: ignore[no-untyped-def]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"version": 2, "runs": [{"nodeid": nodeid(task), "wall_time": seconds, **extra}
                                                       for task, seconds in durations.items()]}))
    return path


def started(tmp_path: Path, collection: list[str], durations: dict[str, float], workers: int = 2):  # type: ignore[no-untyped-def]
    clock = Clock()
    recorded = results_file(tmp_path, durations)
    scheduler = LongestFirstScheduling(FakeConfig(workers), results_file=lambda: recorded, clock=clock)
    nodes = [FakeWorker(f"gw{index}") for index in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    return scheduler, nodes, clock


def names(scheduler: LongestFirstScheduling, indices: list[int]) -> list[str]:
    return [scheduler.collection[index].split("::")[1].split("[")[0] for index in indices]


def test_the_plan_deals_longest_first_to_the_worker_free_first() -> None:
    assert [list(plan) for plan in longest_first_plan([6.3, 2.5, 2.0, 1.8], 2)] == [[0], [1, 2, 3]]
    assert [list(plan) for plan in longest_first_plan([1.0, 1.0, 1.0], 2)] == [[0, 2], [1]]
    assert [list(plan) for plan in longest_first_plan([], 3)] == [[], [], []]


def test_unrecorded_runs_are_expected_to_take_the_median_of_the_recorded_ones() -> None:
    assert expected_lengths(["a", "b", "c", "d"], {"a": 1.0, "b": 5.0, "c": 3.0, "zz": 100.0}) == [1.0, 5.0, 3.0, 3.0]


def test_recorded_durations_skip_resumed_and_unusable_rows_and_never_fail(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"runs": [
        {"nodeid": "a", "wall_time": 2.0}, {"nodeid": "b", "wall_time": 3.0, "resumed": True},
        {"nodeid": "c", "wall_time": 0}, {"nodeid": "d", "wall_time": "7"}, {"wall_time": 1.0}, "junk"]}))
    assert recorded_durations(path) == {"a": 2.0}
    path.write_text("{not json")
    assert recorded_durations(path) == {}
    assert recorded_durations(tmp_path / "missing.json") == {}
    path.write_text(json.dumps(["a list"]))
    assert recorded_durations(path) == {}


def test_the_longest_run_gets_a_worker_to_itself_while_the_other_takes_the_rest(tmp_path: Path) -> None:
    """The 4 tabular baselines: xdist's load gave each worker two; the plan gives the 6.3 s run
    a worker of its own, told to stop after it, and the other three go to the other worker."""
    collection = [nodeid(task) for task in ("diabetes", "house-price", "spaceship", "parkinsons")]
    scheduler, (gw0, gw1), clock = started(tmp_path, collection, RUNS)
    assert names(scheduler, gw0.sent) == ["parkinsons"] and gw0.shutting_down
    assert names(scheduler, gw1.sent) == ["diabetes", "house-price"] and not gw1.shutting_down
    clock.now = 2.5
    scheduler.mark_test_complete(gw1, gw1.sent[0])
    assert names(scheduler, gw1.sent) == ["diabetes", "house-price", "spaceship"] and gw1.shutting_down
    for index in gw1.sent[1:]:
        scheduler.mark_test_complete(gw1, index)
    assert scheduler.has_pending  # parkinsons still runs
    scheduler.mark_test_complete(gw0, gw0.sent[0])
    assert scheduler.tests_finished and not scheduler.has_pending


def test_a_worker_done_early_takes_the_shortest_planned_run_of_the_one_that_ends_last(tmp_path: Path) -> None:
    durations = {"a": 4.0, "b": 4.0, "c": 3.0, "d": 1.0, "e": 1.0}
    collection = [nodeid(task) for task in durations]
    scheduler, (gw0, gw1), clock = started(tmp_path, collection, durations)
    # planned: gw0 a, c (7 s); gw1 b, d, e (6 s)
    assert names(scheduler, gw0.sent) == ["a", "c"] and names(scheduler, gw1.sent) == ["b", "d"]
    clock.now = 1.0  # a took 1 s instead of 4: gw0 is far ahead of plan
    scheduler.mark_test_complete(gw0, gw0.sent[0])
    assert names(scheduler, gw0.sent) == ["a", "c", "e"]
    clock.now = 2.0
    scheduler.mark_test_complete(gw0, gw0.sent[1])  # nothing left in any plan: gw0 stops after e
    assert gw0.shutting_down and not gw1.shutting_down
    clock.now = 4.0
    scheduler.mark_test_complete(gw1, gw1.sent[0])
    assert gw1.shutting_down and names(scheduler, gw1.sent) == ["b", "d"]


def test_taking_another_workers_run_only_when_it_ends_the_session_sooner(tmp_path: Path) -> None:
    durations = {"a": 10.0, "b": 2.0, "c": 2.0, "d": 2.0}
    collection = [nodeid(task) for task in durations]
    scheduler, (gw0, gw1), clock = started(tmp_path, collection, durations)
    assert names(scheduler, gw0.sent) == ["a"] and gw0.shutting_down  # b, c, d (6 s) end before a
    assert names(scheduler, gw1.sent) == ["b", "c"]


def test_runs_of_a_worker_that_died_go_to_the_live_one(tmp_path: Path) -> None:
    durations = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0, "e": 1.0}
    collection = [nodeid(task) for task in durations]
    scheduler, (gw0, gw1), clock = started(tmp_path, collection, durations)
    # planned: gw0 a, d, e (8 s); gw1 b, c (7 s)
    assert names(scheduler, gw0.sent) == ["a", "d"] and names(scheduler, gw1.sent) == ["b", "c"]
    assert scheduler.remove_node(gw0) == nodeid("a")  # xdist reports a as the crashed item
    scheduler.mark_test_complete(gw1, gw1.sent[0])
    assert names(scheduler, gw1.sent) == ["b", "c", "d"]
    for index in gw1.sent[1:]:
        scheduler.mark_test_complete(gw1, index)
    assert names(scheduler, gw1.sent) == ["b", "c", "d", "e"] and gw1.shutting_down and scheduler.tests_finished


def test_runs_of_a_dead_worker_wait_for_the_worker_xdist_starts_in_its_place(tmp_path: Path) -> None:
    durations = {"a": 5.0, "b": 4.0, "c": 3.0, "d": 2.0}
    collection = [nodeid(task) for task in durations]
    scheduler, (gw0, gw1), clock = started(tmp_path, collection, durations)
    assert names(scheduler, gw0.sent) == ["a", "d"] and gw1.shutting_down  # everything was handed out
    scheduler.remove_node(gw0)
    assert not scheduler.tests_finished
    gw2 = FakeWorker("gw2")
    scheduler.add_node(gw2)
    scheduler.add_node_collection(gw2, collection)
    scheduler.schedule()
    assert names(scheduler, gw2.sent) == ["d"] and gw2.shutting_down
    scheduler.mark_test_complete(gw2, gw2.sent[0])
    for index in gw1.sent:
        scheduler.mark_test_complete(gw1, index)
    assert scheduler.tests_finished


def test_without_a_recorded_run_xdist_load_scheduling_is_unchanged(tmp_path: Path) -> None:
    """A first session (nothing recorded) and a session without specs: xdist's own chunks."""
    for collection, durations in (([nodeid(task) for task in RUNS], {"other": 1.0}),
                                  (["tests/test_a.py::test_1", "tests/test_a.py::test_2",
                                    "tests/test_a.py::test_3", "tests/test_a.py::test_4"], RUNS)):
        scheduler, (gw0, gw1), _ = started(tmp_path, collection, durations)
        assert not scheduler.planned
        assert (gw0.sent, gw1.sent) == ([0, 1], [2, 3]) and gw0.shutting_down and gw1.shutting_down


def test_the_plugin_finds_the_results_folder_when_it_schedules_not_when_xdist_makes_the_scheduler(
        tmp_path: Path) -> None:
    """``pytest specs/ -n 2`` with no pytest-mlab option: pytest-mlab sets itself up only once a
    worker reports a Task spec, after xdist made the scheduler; the plan must still use the
    results folder's times."""
    from types import SimpleNamespace

    from pytest_mlab.plugin import pytest_xdist_make_scheduler
    from pytest_mlab.plugin.state import SETTINGS

    class Config(FakeConfig):
        stash: dict = {}

    config = Config(2)
    config.values["dist"] = "load"
    scheduler = pytest_xdist_make_scheduler(config, None)
    results_file(tmp_path, RUNS)
    config.stash[SETTINGS] = SimpleNamespace(out_dir=tmp_path)  # activated by the workers' collection
    nodes = [FakeWorker("gw0"), FakeWorker("gw1")]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, [nodeid(task) for task in RUNS])
    scheduler.schedule()
    assert scheduler.planned and names(scheduler, nodes[0].sent) == ["parkinsons"]


@pytest.mark.parametrize("dist, expected", [("load", LongestFirstScheduling), ("loadfile", type(None))])
def test_the_plugin_plans_only_xdists_load_distribution(dist: str, expected: type, pytestconfig) -> None:
    from pytest_mlab.plugin import pytest_xdist_make_scheduler

    class Config(FakeConfig):
        stash: dict = {}

    config = Config(2)
    config.values["dist"] = dist
    assert type(pytest_xdist_make_scheduler(config, None)) is expected

"""How runs go out to pytest-xdist's workers: longest first, from how long they took last time.

xdist's ``load`` scheduling commits two items to a worker at a time: a worker starts an item
only once it knows the one after it (for fixture teardown) or is told to stop. With a few runs
of very different lengths that decides the session's length: the 4 tabular baselines on 2
workers (6.3, 2.5, 2.0 and 1.8 s) went out two and two, so the longest ran next to one of the
others on the same worker while the other worker idled for 4 s.

This scheduler plans instead, as the longest-processing-time rule does: each run's expected
length is the wall time its row recorded in the session's results folder (results.json keeps
earlier sessions' rows), or the median of the known ones; runs are dealt longest first to the
worker expected to be free first. A worker whose plan is done takes the shortest planned run of
the worker expected to finish last, when that ends the session sooner, and is otherwise told to
stop, so that it runs its last item at once.

It takes over only sessions that collected Task specs of which the results folder recorded at
least one run, under xdist's default ``load`` distribution. Any other session (a first session
in a new results folder, a project's own test suite) gets xdist's LoadScheduling unchanged, in
the interleaved order of plugin/order.py.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import deque
from pathlib import Path
from typing import Callable, Iterable, Mapping

from xdist.scheduler import LoadScheduling

from pytest_mlab.spec.suffixes import SPEC_SUFFIXES

def recorded_durations(results_file: Path) -> dict[str, float]:
    """Node id -> wall seconds of its row in a results.json; empty when there is none or it
    cannot be read (a plan is only a plan: a bad file costs balance, never the session)."""
    try:
        rows = json.loads(results_file.read_text(encoding="utf-8")).get("runs", [])
    except (OSError, ValueError, AttributeError):
        return {}
    durations: dict[str, float] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("nodeid"), str) and isinstance(row.get("wall_time"), (int, float)):
            if row["wall_time"] > 0 and not row.get("resumed"):
                durations[row["nodeid"]] = float(row["wall_time"])
    return durations


def expected_lengths(nodeids: Iterable[str], recorded: Mapping[str, float]) -> list[float]:
    """Each item's expected seconds: its recorded time, else the median of the recorded times of
    this collection's items that have one."""
    nodeids = list(nodeids)
    known = [recorded[nodeid] for nodeid in nodeids if nodeid in recorded]
    fallback = statistics.median(known) if known else 1.0
    return [recorded.get(nodeid, fallback) for nodeid in nodeids]


def longest_first_plan(lengths: list[float], workers: int) -> list[deque[int]]:
    """Item indices per worker, by the longest-processing-time rule: longest first, each to the
    worker whose planned work ends earliest (ties: collected order, then the first worker)."""
    plans: list[deque[int]] = [deque() for _ in range(workers)]
    loads = [0.0] * workers
    for index in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        worker = min(range(workers), key=lambda w: (loads[w], w))
        plans[worker].append(index)
        loads[worker] += lengths[index]
    return plans


class LongestFirstScheduling(LoadScheduling):
    """xdist's scheduler protocol, planned as the module docstring says."""

    def __init__(self, config, log=None, *,  # type: ignore[no-untyped-def]
                 results_file: Callable[[], Path | None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``results_file``: asked once the workers have collected, not when xdist makes the
        scheduler: a session given no pytest-mlab option knows its results folder only once a
        worker reports a Task spec (plugin/__init__.py's activate)."""
        super().__init__(config, log)
        self.results_file = results_file
        self.clock = clock
        self.planned = False  # False: plain LoadScheduling (no Task spec collected)
        self.lengths: list[float] = []
        self.plans: dict[object, deque[int]] = {}
        self.spare: list[int] = []  # items back from a dead worker that no live worker could plan
        self.started: dict[object, float] = {}  # when each worker's running item began

    # -- the protocol ------------------------------------------------------------------------

    def schedule(self) -> None:
        if self.collection is not None:  # again, after a worker was added: top up
            if self.planned:
                for node in self.nodes:
                    self.check_schedule(node)
                return
            return super().schedule()
        collection = next(iter(self.node2collection.values()))
        runs = [nodeid for nodeid in collection if nodeid.split("::")[0].endswith(SPEC_SUFFIXES)]
        results_file = self.results_file() if runs else None
        recorded = recorded_durations(results_file) if results_file is not None else {}
        if not any(nodeid in recorded for nodeid in runs) or not self._check_nodes_have_same_collection():
            return super().schedule()
        self.planned = True
        self.collection = collection
        self.pending[:] = range(len(collection))
        self.lengths = expected_lengths(collection, recorded)
        nodes = self.nodes
        for node, plan in zip(nodes, longest_first_plan(self.lengths, len(nodes))):
            self.plans[node] = plan
        now = self.clock()
        for node in nodes:
            self.started[node] = now
            self.check_schedule(node)

    def check_schedule(self, node, duration: float = 0) -> None:  # type: ignore[no-untyped-def]
        if not self.planned:
            return super().check_schedule(node, duration)
        if node.shutting_down or node not in self.node2pending:
            return
        while len(self.node2pending[node]) < 2:
            index = self._next_for(node)
            if index is None:
                node.shutdown()
                return
            self.pending.remove(index)
            self.node2pending[node].append(index)
            node.send_runtest_some([index])
        if not self.spare and not any(self.plans.values()):
            node.shutdown()  # nothing is left to hand out: its last item may start as soon as it is next

    def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:  # type: ignore[no-untyped-def]
        if self.planned:
            self.started[node] = self.clock()
        super().mark_test_complete(node, item_index, duration)

    def mark_test_pending(self, item: str) -> None:
        if not self.planned:
            return super().mark_test_pending(item)
        assert self.collection is not None
        index = self.collection.index(item)
        self.pending.insert(0, index)
        self._replan([index])

    def remove_node(self, node) -> str | None:  # type: ignore[no-untyped-def]
        if not self.planned:
            return super().remove_node(node)
        pending = self.node2pending.pop(node)
        orphans = list(self.plans.pop(node, deque()))
        self.started.pop(node, None)
        crashed = None
        if pending:
            assert self.collection is not None
            crashed = self.collection[pending.pop(0)]
            orphans = pending + orphans
            self.pending.extend(pending)
        self._replan(orphans)
        return crashed

    # -- planning ------------------------------------------------------------------------------

    def _committed_end(self, node) -> float:  # type: ignore[no-untyped-def]
        """When ``node`` is expected to finish the items it holds."""
        return self.started.get(node, self.clock()) + sum(self.lengths[i] for i in self.node2pending.get(node, ()))

    def _planned_end(self, node) -> float:  # type: ignore[no-untyped-def]
        return self._committed_end(node) + sum(self.lengths[i] for i in self.plans.get(node, ()))

    def _next_for(self, node) -> int | None:  # type: ignore[no-untyped-def]
        """The next item ``node`` commits to: its own plan's next, else the shortest planned item
        of the worker expected to finish last, when taking it ends sooner; None: stop."""
        plan = self.plans.get(node)
        if plan:
            return plan.popleft()
        if self.spare:
            return self.spare.pop(0)
        others = [other for other in self.plans if other is not node and self.plans[other]]
        if not others:
            return None
        victim = max(others, key=self._planned_end)
        candidate = self.plans[victim][-1]
        if self._committed_end(node) + self.lengths[candidate] < self._planned_end(victim):
            return self.plans[victim].pop()
        return None

    def _replan(self, indices: list[int]) -> None:
        """Items back from a worker that died (or that xdist wants run again): each to the live
        worker whose plan ends earliest (or kept for a worker xdist starts in its place), then every
        worker tops up."""
        live = [node for node in self.node2pending if not node.shutting_down]
        for index in sorted(indices, key=lambda i: -self.lengths[i]):
            if live:
                self.plans.setdefault(min(live, key=self._planned_end), deque()).append(index)
            else:
                self.spare.append(index)
        for node in list(self.node2pending):
            self.check_schedule(node)

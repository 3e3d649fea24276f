"""The order items are handed to pytest-xdist's workers in: the runs of one task spread out.

pytest collects a task's runs next to each other (baseline, reference, each seed), and xdist's
``load`` scheduling hands out consecutive items in chunks, so one worker got all the runs of a
task: the main job's two CLRS runs, the longest of all, ran one after the other on one worker
while the other worker had finished everything else. Interleaving the tasks (every task's first
run, then every task's second run, ...) sends a task's runs to whichever worker is free when its
turn comes, and the longest tasks' runs overlap. Without xdist the order is left as collected.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Hashable, Sequence, TypeVar

Item = TypeVar("Item")


def interleaved(items: Sequence[Item], group: Callable[[Item], Hashable | None]) -> list[Item]:
    """``items`` with the members of each group (``group`` returns None for an item in no group,
    which keeps its place) reordered round by round: each group's first member in the groups'
    order of appearance, then each group's second, and so on. Deterministic, so every xdist
    worker collects the same order."""
    seen: dict[Hashable, int] = defaultdict(int)
    rank: dict[int, tuple[int, int]] = {}
    for index, item in enumerate(items):
        key = group(item)
        if key is not None:
            rank[index] = (seen[key], index)
            seen[key] += 1
    slots = sorted(rank)  # the places grouped items held; they get the grouped items in their new order
    reordered = [items[index] for index in sorted(rank, key=rank.__getitem__)]
    result = list(items)
    for slot, item in zip(slots, reordered):
        result[slot] = item
    return result

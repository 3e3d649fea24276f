"""Every problem of one spec, gathered before any is raised, so that a file is fixed in one round.

Checks that read a value the schema already rejected are skipped: they could only repeat the
schema's complaint, or fail on a value of the wrong type.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

from pytest_mlab.errors import SpecError
from pytest_mlab.spec.yaml_lines import JsonPath, LineMap, dotted

T = TypeVar("T")


class Problems:
    """The problems found so far in the spec shown as ``display``, whose lines are ``lines``."""

    def __init__(self, display: str, lines: LineMap) -> None:
        self.display = display
        self.lines = lines
        self.found: list[SpecError] = []
        self._rejected: list[JsonPath] = []

    def error(self, path: JsonPath, message: str) -> SpecError:
        """An error at the line of ``path``."""
        file, line = self.lines.locate(path, self.display)
        return SpecError(file, line, dotted(path), message)

    def add(self, path: JsonPath, message: str) -> None:
        """A problem with the value at ``path``, unless that value was already complained about."""
        if self.usable(path):
            self.reject((path,), self.error(path, message))

    def reject(self, paths: tuple[JsonPath, ...], error: SpecError) -> None:
        """Record ``error``; checks that read any of ``paths`` will not run. The first complaint
        about a value is enough: an error about values all rejected before is left out."""
        if paths and all(path in self._rejected for path in paths):
            return
        self._rejected.extend(paths)
        self.found.extend(error.each())

    def reject_all(self, found: Iterable[tuple[tuple[JsonPath, ...], SpecError]]) -> None:
        for paths, error in found:
            self.reject(paths, error)

    def usable(self, *paths: JsonPath) -> bool:
        """True when nothing rejected lies at, inside or above any of ``paths``."""
        return not any(_overlap(path, bad) for path in paths for bad in self._rejected)

    def run(self, check: Callable[[], T], at: JsonPath, *reads: JsonPath) -> T | None:
        """``check()`` of the value at ``at``, unless it or another value the check ``reads`` was
        rejected. Its SpecError is recorded, not raised, and rejects ``at`` for later checks.
        None when the check did not run or failed."""
        if not self.usable(at, *reads):
            return None
        try:
            return check()
        except SpecError as exc:
            self.reject((at,), exc)
            return None

    def raise_any(self) -> None:
        """One SpecError for everything found: the file's own problems first, each file by line."""
        if self.found:
            raise SpecError.combined(sorted(self.found, key=lambda p: (p.path != self.display, p.line or 0)))


def _overlap(path: JsonPath, other: JsonPath) -> bool:
    """One path is the other, or lies inside it."""
    shorter = min(len(path), len(other))
    return path[:shorter] == other[:shorter]

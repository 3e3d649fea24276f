"""What an action implementation may use: the sandbox, the rules and a place to record sub-steps."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from pytest_mlab.errors import EnvError
from pytest_mlab.sandbox.base import Sandbox
from pytest_mlab.sandbox.paths import normalize_relpath, resolve_in_workspace
from pytest_mlab.spec.models import Limits


@dataclass(frozen=True)
class ReadOnlyRules:
    """Exact data files plus the task's glob patterns, all compared in normalised form."""

    files: frozenset[str] = frozenset()
    patterns: tuple[str, ...] = ()

    def covers(self, relpath: str) -> bool:
        return relpath in self.files or any(fnmatch.fnmatchcase(relpath, pattern) for pattern in self.patterns)


@dataclass
class ActionContext:
    sandbox: Sandbox
    limits: Limits
    read_only: ReadOnlyRules
    remaining_time: float
    low_level: list[dict[str, Any]] = field(default_factory=list)
    llm: Any = None  # pytest_mlab.llm.LLM for composite actions; None when the agent has no LLM
    human: Any = None  # a callable answering Request Help when a human is present, else None
    backups: dict[str, list[bytes | None]] = field(default_factory=dict)
    research_problem: str = ""  # the task's problem statement: Reflection and Retrieval show it to their model

    def writable(self, user_path: str) -> str:
        """Normalised path after checking neither the name nor what it resolves to is read-only."""
        relpath = normalize_relpath(user_path)
        target = resolve_in_workspace(self.sandbox.workspace, user_path)
        resolved_rel = target.relative_to(self.sandbox.workspace).as_posix()
        if self.read_only.covers(relpath) or self.read_only.covers(resolved_rel):
            raise EnvError(f"'{user_path}' is read-only: task data cannot be changed; write your output to another file")
        return relpath

    def record(self, action: str, arguments: dict[str, Any], observation: str) -> None:
        """Log a primitive step taken on the agent's behalf (shown in the trace under the step)."""
        self.low_level.append({"action": action, "arguments": arguments, "observation": observation[:2000]})

    def backup(self, relpath: str) -> None:
        """Remember a file's content before it changes, for Undo Edit Script (None: it did not exist)."""
        previous = self.sandbox.read(relpath) if self.sandbox.exists(relpath) else None
        self.backups.setdefault(relpath, []).append(previous)

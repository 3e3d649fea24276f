"""The Environment: the only way an agent touches its workspace.

Every call is checked against the agent's action list and the action's declared arguments, runs
with the run's limits, and is recorded in the trace with a snapshot of the workspace. Anything the
agent gets wrong comes back as an ``EnvError: ...`` observation; nothing it sends can crash the run.
When the snapshot leaves files out (over the run's snapshot limits, sparse, or hard links to
outside content), the observation says so: those files will not be graded, and the agent should
know while it can still act on it. A workspace beyond its depth, entry or disk limits ends the
run as ``workspace limit``: the agent's failure, with no snapshot and no grade.
"""

from __future__ import annotations

import difflib
import json
import time
from collections.abc import Sequence
from typing import Any, Callable, Mapping

from pytest_mlab.env.context import ActionContext, ReadOnlyRules
from pytest_mlab.errors import EnvError, MlabError, WorkspaceOverLimits
from pytest_mlab.llm.base import ENDS_RUN, RUN_ENDING, LLMError, TokenLimitExceeded
from pytest_mlab.outcomes import EndReason
from pytest_mlab.sandbox.base import Sandbox
from pytest_mlab.spec.models import ActionSpec, ArgumentSpec, Limits
from pytest_mlab.trace import Snapshot, SnapshotCaps, SnapshotStore, TraceWriter, WalkBounds

NOTE_NAMES = 5  # files a snapshot note names before "and N more"
RECORD_NAMES = 100  # files a trace record of a snapshot's omissions lists


class RefusedInput(Exception):
    """The agent's own observation for an input it could not read (see ``Environment.step``)."""


class Environment:
    """``implementations``: the callable of every action in ``actions``, by name, as the action
    registry resolved them; the Environment only dispatches to them."""

    def __init__(self, *, sandbox: Sandbox, actions: tuple[ActionSpec, ...],
                 implementations: Mapping[str, Callable[..., str]], limits: Limits,
                 read_only: ReadOnlyRules, trace: TraceWriter, snapshots: SnapshotStore,
                 research_problem: str, llm: Any = None, human: Any = None) -> None:
        missing = [spec.name for spec in actions if spec.name not in implementations]
        if missing:
            raise MlabError(f"no implementation given for the actions {', '.join(missing)}")
        self.sandbox = sandbox
        self.actions = {spec.name: spec for spec in actions}
        self.implementations = dict(implementations)
        self.limits = limits
        self.read_only = read_only
        self.trace = trace
        self.snapshots = snapshots
        self.research_problem = research_problem
        self.llm = llm  # pytest_mlab.llm.LLM, shared by the agent and composite actions
        self.human = human
        self.steps = 0
        self.end_reason: EndReason | None = None
        self.final_answer: str | None = None
        self.last_snapshot: str | None = None
        self.over_limits: str | None = None  # why the workspace went beyond its limits, once it has
        self.started = time.monotonic()
        self._backups: dict[str, list[bytes | None]] = {}
        sandbox.expect_commands()

    # ------------------------------------------------------------------ state

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining_time(self) -> float:
        return max(0.0, self.limits.max_time - self.elapsed)

    # ------------------------------------------------------------------ stepping

    def step(self, action: str, arguments: dict[str, Any] | None = None, *,
             thinking: dict[str, str] | None = None, refused: str | None = None) -> str:
        """Carry out one action and return its observation. ``thinking``: the agent's reasoning
        entries for this step (e.g. Reflection, Fact Check), kept in the trace for readers and
        for the claimed-but-unmeasured check. ``refused``: the agent could not read the action's
        input and gives this observation instead; nothing runs, but the step is recorded and counted."""
        if self.done:
            return f"EnvError: the run has ended ({self.end_reason}); no more actions are accepted"
        started_wall, started = time.time(), time.monotonic()
        context = ActionContext(self.sandbox, self.limits, self.read_only, self.remaining_time(),
                                backups=self._backups, llm=self.llm, human=self.human,
                                research_problem=self.research_problem)
        is_error, llm_failure = False, None
        try:
            if refused is not None:
                raise RefusedInput(refused)
            spec = self._spec(action)
            values = self._arguments(spec, arguments)
            observation = self.implementations[spec.name](context, **values)
            if spec.ends_run:
                self.final_answer = str(next(iter(values.values()), ""))
                self.end_reason = EndReason.FINAL_ANSWER
        except RefusedInput as exc:
            observation, is_error = str(exc), True
        except EnvError as exc:
            observation, is_error = f"EnvError: {exc}", True
        except ENDS_RUN as exc:  # the provider, the budget or the run's time gave out: the run ends
            observation, is_error, llm_failure = f"{type(exc).__name__}: {exc}", True, exc
            self.end_reason = next(reason for kind, reason in RUN_ENDING.items() if isinstance(exc, kind))
        except TokenLimitExceeded as exc:  # a composite action's input is too long for its model: the agent goes on
            observation, is_error = f"EnvError: too long input for the tool ({exc})", True
        except LLMError as exc:  # a composite action's LLM call failed: an observation, as in the original
            observation, is_error = f"LLMError: {exc}", True
        self.steps += 1
        self.trace.current_step = self.steps + 1
        if not self.done:
            if self.steps >= self.limits.max_steps:
                self.end_reason = EndReason.STEP_LIMIT
            elif self.elapsed >= self.limits.max_time:
                self.end_reason = EndReason.TIME_LIMIT
        snapshot = self._bounded_snapshot()
        omitted = snapshot.omitted if snapshot is not None else ()
        if omitted:
            observation = f"{observation}\n\n{omitted_note(omitted)}"
        elif snapshot is None:
            observation = f"{observation}\n\nThe run has ended: {self.over_limits}."
        self.trace.write({"type": "step", "step": self.steps, "action": action, "arguments": arguments,
                          "observation": observation, "error": is_error, "started": started_wall,
                          "duration": round(time.monotonic() - started, 6), "low_level": context.low_level,
                          "snapshot": snapshot.id if snapshot is not None else None, "ended": self.end_reason,
                          **({"thinking": thinking} if thinking else {}), **omitted_record(omitted)})
        if llm_failure is not None:
            raise llm_failure  # the runner records how the run ended, with the message
        return observation

    def end(self, reason: EndReason, detail: str | None = None) -> None:
        """Stop the run from outside (crash, Ctrl-C); the first reason recorded wins."""
        if self.end_reason is None:
            self.end_reason = reason
        self.trace.write({"type": "ended", "reason": self.end_reason, "detail": detail, "steps": self.steps})

    def final_snapshot(self) -> str | None:
        """The workspace as it is now, after anything a dying run left behind; what it leaves
        out is recorded in the trace, since no observation will carry it. None when the workspace
        is beyond its limits: the run then ends as ``workspace limit``, and nothing is graded."""
        snapshot = self._bounded_snapshot()
        if snapshot is None:
            self.trace.write({"type": "snapshot", "snapshot": None, "workspace_limit": self.over_limits})
            return None
        if snapshot.omitted:
            self.trace.write({"type": "snapshot", "snapshot": snapshot.id, "note": omitted_note(snapshot.omitted),
                              **omitted_record(snapshot.omitted)})
        return snapshot.id

    # ------------------------------------------------------------------ helpers

    def _bounded_snapshot(self) -> Snapshot | None:
        """A snapshot, or None once the workspace went beyond its depth, entry or disk limits: the
        agent's failure, which ends the run (``over_limits`` says why) and is never retried."""
        if self.over_limits is None:
            try:
                return self._snapshot()
            except WorkspaceOverLimits as exc:
                self.over_limits = str(exc)
        self.end_reason = EndReason.WORKSPACE_LIMIT
        return None

    def _snapshot(self) -> Snapshot:
        """Snapshot the workspace within the run's limits (read-only data is linked, never counted)."""
        self.sandbox.sync_out()
        limits = self.limits
        caps = SnapshotCaps(run_bytes=limits.snapshot_bytes, files=limits.snapshot_files,
                            file_size=limits.snapshot_file_size, disk=limits.disk,
                            bounds=WalkBounds(depth=limits.workspace_depth, entries=limits.workspace_files))
        snapshot = self.snapshots.snapshot(self.sandbox.workspace, link_paths=self.read_only.files, caps=caps,
                                           lower=self.sandbox.lower_layer)
        self.last_snapshot = snapshot.id
        return snapshot

    def _spec(self, action: str) -> ActionSpec:
        if not isinstance(action, str) or action not in self.actions:
            names = list(self.actions)
            guess = difflib.get_close_matches(str(action), names, n=1)
            hint = f" Did you mean '{guess[0]}'?" if guess else ""
            raise EnvError(f"invalid action {action!r}.{hint} Available actions: {', '.join(names)}")
        return self.actions[action]

    def _arguments(self, spec: ActionSpec, arguments: dict[str, Any] | None) -> dict[str, Any]:
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            raise EnvError(f"the input of {spec.name} must be a JSON object like {usage(spec)}")
        known = {arg.name: arg for arg in spec.arguments}
        unknown = [key for key in arguments if key not in known]
        if unknown:
            raise EnvError(f"{spec.name} has no argument '{unknown[0]}'; use {usage(spec)}")
        values = {}
        for arg in spec.arguments:
            if arg.name in arguments:
                values[arg.name] = _coerce(spec, arg, arguments[arg.name])
            elif arg.required:
                raise EnvError(f"{spec.name} needs the argument '{arg.name}' ({arg.description}); use {usage(spec)}")
            else:
                values[arg.name] = arg.default
        return values


def omitted_note(omitted: Sequence[tuple[str, str]]) -> str:
    """One short paragraph telling the agent which files the snapshot left out, and why."""
    count = len(omitted)
    named = ", ".join(f"{path} ({reason})" for path, reason in omitted[:NOTE_NAMES])
    more = f", and {count - NOTE_NAMES:,} more" if count > NOTE_NAMES else ""
    subject = "1 file was" if count == 1 else f"{count:,} files were"
    return f"Note: {subject} not saved in the workspace snapshot and will not be graded: {named}{more}."


def omitted_record(omitted: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The trace fields for a snapshot's omissions (none when it kept everything)."""
    if not omitted:
        return {}
    return {"omitted": {"count": len(omitted), "files": [list(item) for item in omitted[:RECORD_NAMES]]}}


def usage(spec: ActionSpec) -> str:
    """The JSON template an agent should send, e.g. ``{"script_name": "[a valid python script name]"}``."""
    return json.dumps({arg.name: f"[{arg.description}]" for arg in spec.arguments})


def _coerce(spec: ActionSpec, arg: ArgumentSpec, value: Any) -> Any:
    """Accept what LLMs typically send: numbers as strings, integers as floats like 5.0."""
    try:
        if arg.type == "string":
            if value is None or isinstance(value, (dict, list)):  # null is no text, not the text "None"
                raise ValueError
            return value if isinstance(value, str) else str(value)
        if arg.type == "integer":
            if isinstance(value, bool):
                raise ValueError
            number = float(value)
            if number != int(number):
                raise ValueError
            return int(number)
        if arg.type == "number":
            return float(value)
        if arg.type == "boolean":
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "false"):
                return str(value).lower() == "true"
            raise ValueError
    except (TypeError, ValueError):
        pass
    raise EnvError(f"{spec.name}: argument '{arg.name}' must be {'an' if arg.type == 'integer' else 'a'} "
                   f"{arg.type}, got {value!r}")

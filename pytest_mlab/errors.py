"""The project's exception types; every message is written for the person who must act on it."""

from __future__ import annotations


class MlabError(Exception):
    """Base of every error pytest-mlab raises on purpose."""


class SpecError(MlabError):
    """A spec file is invalid. Rendered as ``path:line: json.path: message`` without a traceback."""

    def __init__(self, path: str, line: int | None, where: str, message: str,
                 others: "list[SpecError] | None" = None) -> None:
        self.path = str(path)
        self.line = line
        self.where = where
        self.message = message
        self.others = list(others or [])
        super().__init__(self.render())

    def render_one(self) -> str:
        location = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{location}: {self.where}: {self.message}" if self.where else f"{location}: {self.message}"

    def render(self) -> str:
        """All problems found in the file, one per line, the first one first."""
        return "\n".join([self.render_one()] + [other.render_one() for other in self.others])

    def each(self) -> "list[SpecError]":
        """This problem and the others found with it, one error per problem."""
        return [SpecError(self.path, self.line, self.where, self.message), *self.others]

    @classmethod
    def combined(cls, problems: "list[SpecError]") -> "SpecError":
        """One error that reports every problem of ``problems`` (at least one), in their order."""
        first, *rest = [one for problem in problems for one in problem.each()]
        return cls(first.path, first.line, first.where, first.message, rest)


class SpecWarning(UserWarning):
    """A spec file is broken, but nothing the session runs needs it: it is reported, never fatal."""


class UsageError(MlabError):
    """A command-line option or ini setting has a value we cannot use."""


class EnvError(MlabError):
    """An action call the agent made cannot be carried out; becomes an ``EnvError: ...`` observation."""


class SandboxError(MlabError):
    """The sandbox itself failed (not the agent's code); the run is recorded as crashed."""


class HostLost(SandboxError):
    """The machine running a sandbox (a docker host) stopped answering mid-run: an infrastructure
    failure, not the agent's; the run keeps its trace up to the last step and --mlab-resume runs it again."""


class WorkspaceOverLimits(MlabError):
    """The agent's workspace went beyond its limits (folders nested too deep, too many entries,
    too many bytes, a folder the harness cannot read): a failure of the agent, in a category of
    its own, never of the harness. The message names the limit and the spec key that sets it."""


class DataError(MlabError):
    """A task's data could not be prepared."""


class GradingError(MlabError):
    """The grader could not be run at all (as opposed to rejecting a submission)."""


class InvalidSubmission(MlabError):
    """Raised by a task's grader when the submission cannot be scored; the message says why."""


class TraceError(MlabError):
    """A trace or snapshot store is unreadable or corrupt, or a snapshot id is unknown."""


class DataCacheWarning(UserWarning):
    """Prepared data was altered after it was stamped (an agent under the local backend can write
    the cache): it is prepared again, and the warning names the task and the files."""


class UnsignedRecordWarning(UserWarning):
    """A run's ``result`` record lacks the harness's signature (results/signing.py): something
    other than the harness wrote it, or an older version did; the run is not trusted and runs again."""


class TaskRuntimeError(MlabError):
    """The agents' Python environment (the task runtime) cannot be built or used."""


class OriginalLogError(MlabError):
    """A log folder of the original MLAgentBench cannot be imported; the message names the file."""

"""Python REPL: run Python code in the sandbox, never in the harness process.

Each command runs in a fresh interpreter inside the sandbox (same working directory, limits and
filtered environment as Execute Script). State persists by replay: the commands that succeeded
earlier in the run are run again first, silently, in one namespace, then the new command. So
variables, imports and functions carry over; side effects of earlier commands (writing a file,
training a model) happen again, and a slow earlier command makes every later one slow.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path

from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError
from pytest_mlab.in_sandbox import repl_runner
from pytest_mlab.sandbox.base import Sandbox
from pytest_mlab.spec.units import format_duration

#: Successful commands per sandbox (so per run); forgotten when the run's sandbox goes away.
_HISTORY: "weakref.WeakKeyDictionary[Sandbox, list[str]]" = weakref.WeakKeyDictionary()
_RUNNER = Path(repl_runner.__file__).read_text(encoding="utf-8")


def python_repl(ctx: ActionContext, command: str) -> str:
    history = _HISTORY.setdefault(ctx.sandbox, [])
    timeout = min(ctx.limits.execute_timeout, max(ctx.remaining_time, 1.0))
    payload = json.dumps({"history": history, "command": command})
    result = ctx.sandbox.exec([ctx.sandbox.python, "-c", _RUNNER], timeout=timeout,
                              output_limit=ctx.limits.output_limit, stdin=payload)
    output = result.stdout + result.stderr
    if result.timed_out:
        raise EnvError(f"the command was stopped after {format_duration(timeout)} (time limit; earlier "
                       f"commands are run again first, see the action's description); output before it was "
                       f"stopped:\n{output}")
    if result.returncode == 0:
        history.append(command)
        return output if output.strip() else "(the command printed nothing)"
    if result.returncode == repl_runner.FAILED:
        return f"The command raised an error (it is not kept for later commands):\n{output}"
    return f"The Python process ended with exit code {result.returncode}:\n{output}"

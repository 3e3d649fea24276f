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

from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError
from pytest_mlab.sandbox.base import Sandbox
from pytest_mlab.sandbox.quiet import script_running
from pytest_mlab.spec.units import format_duration

#: Successful commands per sandbox (so per run); forgotten when the run's sandbox goes away.
_HISTORY: "weakref.WeakKeyDictionary[Sandbox, list[str]]" = weakref.WeakKeyDictionary()
_FAILED = 3  # exit code of the runner when the new command raised

# Runs inside the sandbox: replays the history with output discarded, then runs the new command
# the way the interactive interpreter does (the value of a final expression is printed).
_RUNNER = r"""
import ast, contextlib, io, json, sys, traceback
payload = json.loads(sys.stdin.read())
namespace = {"__name__": "__main__"}
for earlier in payload["history"]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            exec(compile(earlier, "<earlier command>", "exec"), namespace)
        except BaseException:
            pass
try:
    tree = ast.parse(payload["command"], "<command>")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body.pop()
        exec(compile(tree, "<command>", "exec"), namespace)
        value = eval(compile(ast.Expression(last.value), "<command>", "eval"), namespace)
        if value is not None:
            print(repr(value))
    else:
        exec(compile(tree, "<command>", "exec"), namespace)
except SystemExit:
    pass
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    sys.exit(%d)
""" % _FAILED


def python_repl(ctx: ActionContext, command: str) -> str:
    history = _HISTORY.setdefault(ctx.sandbox, [])
    timeout = min(ctx.limits.execute_timeout, max(ctx.remaining_time, 1.0))
    payload = json.dumps({"history": history, "command": command})
    with script_running():
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
    if result.returncode == _FAILED:
        return f"The command raised an error (it is not kept for later commands):\n{output}"
    return f"The Python process ended with exit code {result.returncode}:\n{output}"

"""Execute Script: run a Python script inside the sandbox with the run's time and output limits."""

from __future__ import annotations

from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError
from pytest_mlab.sandbox.base import ExecResult
from pytest_mlab.sandbox.paths import normalize_relpath
from pytest_mlab.spec.units import format_duration

HEADER = "The script has been executed"


def execute_script(ctx: ActionContext, script_name: str) -> str:
    relpath = normalize_relpath(script_name)
    if not relpath.endswith(".py"):
        raise EnvError(f"Execute Script runs Python scripts; '{script_name}' is not a .py file")
    if not ctx.sandbox.exists(relpath):
        raise EnvError(f"the script '{script_name}' does not exist in the workspace; create it first")
    timeout = min(ctx.limits.execute_timeout, max(ctx.remaining_time, 1.0))
    result = ctx.sandbox.exec([ctx.sandbox.python, relpath], timeout=timeout, output_limit=ctx.limits.output_limit)
    if result.timed_out:
        raise EnvError(f"the script was stopped after {format_duration(timeout)} (time limit); "
                       f"output before it was stopped:\n{result.stdout}{result.stderr}")
    if result.returncode != 0:
        return (f"{HEADER} and failed with exit code {result.returncode}. "
                f"Here is the output:\n{_shown_output(result)}")
    return f"{HEADER}. Here is the output:\n{_shown_output(result)}"


def _shown_output(result: ExecResult) -> str:
    """One stream, as the paper's environment chose it: a failed script shows its error stream,
    a successful one what it printed. Each falls back to the other stream when empty, so a script
    that logs only to stderr, or one that prints its error and exits, is not shown as silent."""
    first, other = (result.stderr, result.stdout) if result.returncode != 0 else (result.stdout, result.stderr)
    return first if first else other

"""Execute Script: run a Python script inside the sandbox with the run's time and output limits."""

from __future__ import annotations

from pytest_mlab.env.context import ActionContext
from pytest_mlab.errors import EnvError
from pytest_mlab.sandbox.paths import normalize_relpath
from pytest_mlab.spec.units import format_duration


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
        return (f"The script has been executed and failed with exit code {result.returncode}. "
                f"Here is the output:\n{result.stdout}{result.stderr}")
    return f"The script has been executed. Here is the output:\n{result.stdout}"

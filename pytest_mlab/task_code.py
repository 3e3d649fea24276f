"""Run a function from a task's assets folder (data recipe, grader) in a process of its own.

Task code is trusted but heavy (pandas, torch) and may crash; a separate process keeps the
pytest worker clean and lets us time it out. The result comes back through a JSON file, so the
function may print freely.

The process starts in a fresh, empty working directory (never the assets folder, which later
runs import graders from), and everything it starts is contained and ended with it: in a pid
namespace where bwrap works, else a cgroup, else the process tree
(:mod:`pytest_mlab.sandbox.containment`).

Usage as a module (internal): ``python -m pytest_mlab.task_code REQUEST.json RESULT.json``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_mlab.sandbox.containment import run_contained
from pytest_mlab.sandbox.workspace import scratch_folder
from pytest_mlab.spec.models import FunctionRef

OUTPUT_KEPT = 20000  # characters of the function's output kept for messages


@dataclass(frozen=True)
class TaskCallResult:
    """What the function returned, or why it did not."""

    value: Any = None
    invalid: str | None = None  # the function raised InvalidSubmission(message)
    error: str | None = None  # any other failure, with the traceback's last lines
    output: str = ""  # what the function printed


def call_task_function(assets: Path, ref: FunctionRef, arguments: dict[str, Any], *, timeout: float | None,
                       env: dict[str, str] | None = None, stream: bool = False) -> TaskCallResult:
    """Call ``assets/ref.file:ref.function(**arguments)``; ``Path`` arguments arrive as ``Path``,
    others as their JSON values. ``stream`` lets what the function prints (download progress)
    go straight to this process's terminal instead of into ``output``."""
    with scratch_folder("call") as scratch:
        request, result, log, cwd = (Path(scratch) / name for name in ("request.json", "result.json", "output", "cwd"))
        cwd.mkdir()
        request.write_text(json.dumps({"file": str(assets / ref.file), "function": ref.function,
                                       "paths": {key: str(value) for key, value in arguments.items()
                                                 if isinstance(value, Path)},
                                       "values": {key: value for key, value in arguments.items()
                                                  if not isinstance(value, Path)}}))
        with nullcontext(None) if stream else open(log, "wb") as sink:
            code = run_contained([sys.executable, "-m", "pytest_mlab.task_code", str(request), str(result)],
                                 cwd=cwd, env=_with_this_package(env), timeout=timeout, output=sink)
        if code is None:
            return TaskCallResult(error=f"{ref} did not finish within {timeout:.0f}s")
        output = "" if stream else _tail(log)
        if not result.exists():
            return TaskCallResult(error=f"{ref} exited with code {code} before returning:\n{output}", output=output)
        payload = json.loads(result.read_text())
        return TaskCallResult(value=payload.get("value"), invalid=payload.get("invalid"),
                              error=payload.get("error"), output=output)


def _tail(path: Path) -> str:
    """The last ``OUTPUT_KEPT`` characters of a log, reading no more of it than that needs."""
    with open(path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4 * OUTPUT_KEPT))
        return handle.read().decode("utf-8", "replace")[-OUTPUT_KEPT:]


def _with_this_package(env: dict[str, str] | None) -> dict[str, str]:
    """The child imports the same pytest_mlab as this process, whatever else is installed, and
    writes no bytecode next to the task's files: the assets folder stays as the task ships it."""
    env = dict(os.environ if env is None else env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    package_root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    return env


def _main(request_path: str, result_path: str) -> int:
    request = json.loads(Path(request_path).read_text())
    payload: dict[str, Any]
    try:
        module = _import_file(Path(request["file"]))
        function = getattr(module, request["function"])
        arguments = {key: Path(value) for key, value in request["paths"].items()}
        arguments.update(request["values"])
        value = function(**arguments)
        payload = {"value": value.item() if hasattr(value, "item") else value}  # numpy scalars
        json.dumps(payload)
    except Exception as exc:  # the whole point is to report any failure of task code
        from pytest_mlab.errors import InvalidSubmission

        if isinstance(exc, InvalidSubmission) or type(exc).__name__ == "InvalidSubmission":
            payload = {"invalid": str(exc)}
        else:
            lines = traceback.format_exception(exc)
            payload = {"error": "".join(lines[-6:]).strip()}
    tmp = Path(result_path).with_suffix(".tmp")
    tmp.write_text(json.dumps(payload, default=str))
    os.replace(tmp, result_path)
    return 0


def _import_file(path: Path):
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(f"mlab_task_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1], sys.argv[2]))

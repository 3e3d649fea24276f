"""One run of the original MLAgentBench, read from its log folder as the original wrote it.

What the original leaves per run (``MLAgentBench/environment.py``, ``agents/agent_research.py``,
``LLM.py``, ``runner.py`` at 5d71205):

- ``env_log/trace.json``: ``steps`` (each ``action.name``, ``action.args``, ``observation``,
  ``timestamp``), written after every step;
- ``env_log/traces/step_N_files/``: the workspace's files that are not read-only, after step N
  (0-based), and ``step_final_files/`` after a clean exit, the folder its eval.py grades;
- ``env_log/error.txt``: the traceback of an exception out of the agent (the 5-hour alarm's
  ``TimeoutException`` among them); ``env_log/overall_time.txt``: written at every exit, missing
  when the process died;
- ``env_log/<benchmark folder>/scripts/research_problem.txt``: which task it was;
- ``agent_log/main_log`` and ``agent_log/step_N_log.log`` (every prompt and completion of the
  agent's step N, with the model's name), and the runner's output in ``log``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_mlab.errors import OriginalLogError
from pytest_mlab.original_logs.layout import FoundRun
from pytest_mlab.outcomes import EndReason

#: The original's defaults (``runner.py``): 50 steps, 5 hours.
MAX_STEPS = 50
MAX_TIME_S = 5 * 60 * 60
#: Actions the research agent runs itself around its own steps, which its step logs do not count.
AGENT_OWN_ACTIONS = ("Retrieval from Research Log", "Append Summary to Research Log")
#: What plot.py's connection_error looks for (``MLAgentBench/plot.py:82-86``).
CONNECTION_MARKERS = ("Connection aborted",
                      "You exceeded your current quota, please check your plan and billing details.",
                      "Error: 'text-similarity-ada-001'", "Error: 'text-embedding-ada-001'")
_CALL = re.compile(r"\n===================prompt=====================\n(?P<prompt>.*?)"
                   r"\n===================(?P<model>.*?) response \((?P<max_tokens>\d+)\)=====================\n"
                   r"(?P<completion>.*?)\n===================tokens=====================\n"
                   r"Number of prompt tokens: (?P<prompt_tokens>\d+)\nNumber of sampled tokens: (?P<sampled>\d+)\n",
                   re.DOTALL)


@dataclass(frozen=True)
class OriginalStep:
    action: str
    arguments: dict[str, Any]
    observation: str
    timestamp: float | None
    files: Path | None  # traces/step_N_files, where the original saved it


@dataclass(frozen=True)
class OriginalCall:
    """One LLM call from an agent step's log."""

    agent_step: int
    model: str
    prompt: str
    completion: str
    max_tokens: int
    prompt_tokens: int
    completion_tokens: int


@dataclass
class OriginalRun:
    found: FoundRun
    benchmark_folder: str | None
    research_problem: str | None
    steps: list[OriginalStep]
    final_files: Path | None
    error: str | None  # error.txt
    overall_time: float | None  # overall_time.txt; None when the process died
    logs: str  # main_log and log, for what plot.py searches them for
    final_message: str | None
    calls: list[OriginalCall] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was missing, said in the row's message


def read_run(found: FoundRun) -> OriginalRun:
    """The run, or an OriginalLogError naming the file that cannot be read and why."""
    env_log = found.env_log
    trace_path = env_log / "trace.json"
    try:
        data = json.loads(trace_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise OriginalLogError(f"{found.shown}/env_log/trace.json: not valid JSON at line {exc.lineno}, column "
                               f"{exc.colno} ({exc.msg}); the file may be truncated (the run was killed while "
                               "writing it)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise OriginalLogError(f"{found.shown}/env_log/trace.json: cannot be read ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise OriginalLogError(f"{found.shown}/env_log/trace.json: has no 'steps' list; is it a trace.json the "
                               "original MLAgentBench wrote?")
    notes: list[str] = []
    steps = [_step(found, env_log, index, raw, notes) for index, raw in enumerate(data["steps"])]
    benchmark = _benchmark_folder(env_log)
    final = env_log / "traces" / "step_final_files"
    root = found.root
    logs = "\n".join(_text(path) for path in (root / "agent_log" / "main_log", root / "log") if path.is_file())
    return OriginalRun(
        found=found, benchmark_folder=benchmark,
        research_problem=_text(env_log / benchmark / "scripts" / "research_problem.txt") if benchmark else
        (data.get("task_description") if isinstance(data.get("task_description"), str) else None),
        steps=steps, final_files=final if final.is_dir() else None,
        error=_text(env_log / "error.txt") if (env_log / "error.txt").is_file() else None,
        overall_time=_seconds(env_log / "overall_time.txt"), logs=logs, final_message=_final_message(logs),
        calls=_calls(root / "agent_log"), notes=notes)


def _step(found: FoundRun, env_log: Path, index: int, raw: Any, notes: list[str]) -> OriginalStep:
    where = f"{found.shown}/env_log/trace.json: step {index}"
    if not isinstance(raw, dict) or not isinstance(raw.get("action"), dict) or "name" not in raw["action"]:
        raise OriginalLogError(f"{where} has no action name; every step of the original's trace has "
                               "action.name, action.args, observation and timestamp")
    arguments = raw["action"].get("args")
    files = env_log / "traces" / f"step_{index}_files"
    if not files.is_dir():
        files = None
        if not notes:  # one note for the run, not one per step
            notes.append(f"no saved files for step {index} (env_log/traces/step_{index}_files); the step keeps "
                         "the workspace of the step before it")
    timestamp = raw.get("timestamp")
    return OriginalStep(action=str(raw["action"]["name"]),
                        arguments=arguments if isinstance(arguments, dict) else {"input": arguments},
                        observation=str(raw.get("observation", "")),
                        timestamp=float(timestamp) if isinstance(timestamp, (int, float)) else None, files=files)


def _benchmark_folder(env_log: Path) -> str | None:
    """The task's copy the environment saved beside its logs: the folder with scripts/research_problem.txt."""
    for child in sorted(env_log.iterdir()):
        if child.is_dir() and (child / "scripts" / "research_problem.txt").is_file():
            return child.name
    return None


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _seconds(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _final_message(logs: str) -> str | None:
    """What the agent returned, as the runner printed it ("Final message: ...")."""
    found = re.findall(r"^Final message:\s*(.*)$", logs, flags=re.MULTILINE)
    return found[-1].strip() if found else None


def _calls(agent_log: Path) -> list[OriginalCall]:
    calls = []
    if not agent_log.is_dir():
        return calls
    numbered = sorted((int(number[1]), path) for path in agent_log.glob("step_*_log.log")
                      if (number := re.fullmatch(r"step_(\d+)_log\.log", path.name)))
    for step, path in numbered:
        for match in _CALL.finditer(_text(path)):
            prompt = match["prompt"].removeprefix("\n\nHuman: ").removesuffix(" \n\nAssistant:")
            calls.append(OriginalCall(step, match["model"], prompt, match["completion"],
                                      int(match["max_tokens"]), int(match["prompt_tokens"]), int(match["sampled"])))
    return calls


def end_reason(run: OriginalRun, *, max_steps: int = MAX_STEPS, max_time: float = MAX_TIME_S) -> tuple[EndReason, str]:
    """How the run ended, in our words, and the detail the original left: error.txt's last line,
    or why none was written."""
    if run.error is not None:
        last = next((line.strip() for line in reversed(run.error.splitlines()) if line.strip()), "error.txt is empty")
        if "TimeoutException" in run.error:
            return EndReason.TIME_LIMIT, last
        if "TooLongPromptError" in run.error:
            return EndReason.TOKEN_LIMIT, last
        if "KeyboardInterrupt" in run.error:
            return EndReason.INTERRUPTED, last
        if any(marker in run.error for marker in ("APIConnectionError", "RateLimitError", "ServiceUnavailable",
                                                    "APIError", "Connection aborted")):
            return EndReason.PROVIDER_ERROR, last
        return EndReason.CRASHED, last
    if run.overall_time is None:
        return EndReason.HOST_LOST, "no overall_time.txt: the process died without its exit handler"
    if any(step.action == "Final Answer" for step in run.steps):
        return EndReason.FINAL_ANSWER, "Final Answer"
    if len(run.steps) >= max_steps:
        return EndReason.STEP_LIMIT, f"{len(run.steps)} steps"
    if run.overall_time > max_time:
        return EndReason.TIME_LIMIT, f"{run.overall_time:.0f} s"
    if run.final_message and "No valid response" in run.final_message:
        return EndReason.INVALID_RESPONSES, run.final_message
    return EndReason.NO_FINAL_ANSWER, run.final_message or "the agent stopped without a final answer"


def agent_step_numbers(run: OriginalRun) -> dict[int, int]:
    """The agent's step N (its step logs' numbering) -> our step number (1-based, every action in
    the trace): the agent's own research-log actions are steps in the trace but not in its count."""
    mapping, agent_step = {}, 0
    for index, step in enumerate(run.steps, start=1):
        if step.action in AGENT_OWN_ACTIONS:
            continue
        mapping[agent_step] = index
        agent_step += 1
    return mapping


def connection_error(run: OriginalRun) -> bool:
    return any(marker in run.logs for marker in CONNECTION_MARKERS)

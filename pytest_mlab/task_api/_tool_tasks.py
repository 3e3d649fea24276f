"""The LLM-tool tasks (literature review, BibTeX generation): their fixtures, what their graders
read of the tool's runs, and the score they share.

These tasks grade a program, not a file of predictions. The program never runs in the grader:
the tasks' measure step (task_assets/literature-review-tool/measure.py, shared by both) runs it
once per case inside the run's sandbox, on a copy of the workspace with the task's own helper
modules (LLM.py, papers.py) over the agent's copies, a scripted LLM and a local paper index, a
per-case timeout, and everything it started killed after each case. It brings back, per case,
the tool's output files, the helpers' logs of LLM calls and searches, and ``run.json``. Those
logs are written by code in the same sandbox as the tool: a tool can forge them (the checks
built on them test the tool's own behaviour, which it controls anyway).

The hidden folder holds the expectations (``cases.json``, for the grader only) apart from what
the tool may see (``tool_cases.json``: the arguments and input files of each case; the LLM script;
the paper index; the helpers), which are the measure step's inputs.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from pytest_mlab.errors import InvalidSubmission
from pytest_mlab.grading.measured import executions

OUTPUT_SHOWN = 800  # characters of a failed tool's output shown in the grader's report
CASES = "cases.json"  # the hidden cases with their expectations: the grader's alone
TOOL_CASES = "tool_cases.json"
HELPERS = ("LLM.py", "papers.py")
#: The hidden files the measure step reads (``metric.measure.inputs`` of both tasks).
INPUTS = (TOOL_CASES, "llm_script.yaml", "papers.json", *HELPERS)


@dataclass(frozen=True)
class ToolRun:
    """What running the tool on one case did, as the measure step recorded it."""

    folder: Path          # the case's output files and logs
    returncode: int | None  # None: killed at the timeout
    output: str           # the end of the tool's stdout and stderr
    llm_prompts: list[str]
    queries: list[str]

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def write_fixtures(hidden: Path, papers: list[dict], llm_script: dict, cases: list[dict], tool: dict,
                   helpers: Path) -> None:
    """The hidden files of a tool task: the grader's ``cases.json`` and the measure step's inputs
    (``tool``: script, outputs, helpers, per-case timeout and the cases' arguments and input
    files; the LLM script; the paper index; the helper modules copied from ``helpers``)."""
    import yaml

    (hidden / "papers.json").write_text(json.dumps(papers, indent=1) + "\n")
    (hidden / "llm_script.yaml").write_text(yaml.safe_dump(llm_script, sort_keys=False, width=1000))
    (hidden / CASES).write_text(json.dumps(cases, indent=1) + "\n")
    (hidden / TOOL_CASES).write_text(json.dumps({**tool, "helpers": list(HELPERS)}, indent=1) + "\n")
    for name in HELPERS:
        shutil.copyfile(helpers / name, hidden / name)  # follows links: the task's real helper


def score_tool_cases(workspace: Path, answers: Path, measured: Path, *, script: str, usage: str,
                     label: Callable[[dict], str], checks: Callable[[dict, ToolRun], dict[str, bool]]) -> float:
    """A tool task's score: the fraction of ``checks`` (of a hidden case and the tool's run on it)
    passed over every case, each case's outcomes printed under ``label(case)``. A workspace
    without ``script`` is invalid; ``usage``, the arguments it is run with, goes in the message."""
    if not (Path(workspace) / script).is_file():
        raise InvalidSubmission(f"{script}: file not found in the workspace; the grader runs python {script} {usage}")
    cases = json.loads((Path(answers) / CASES).read_text())
    results = []
    for case, run in zip(cases, tool_runs(Path(measured), len(cases), script)):
        results += report(label(case), checks(case, run), run)
    return sum(results) / len(results)


def tool_runs(measured: Path, count: int, script: str) -> list[ToolRun]:
    """The tool's ``count`` runs, one per case; a measurement that did not get through them all
    (not the tool failing: the measure step itself) makes the submission invalid."""
    (execution,) = executions(measured)
    result = execution.result()
    if result is None or result.get("cases") != count:
        raise InvalidSubmission(f"{script}: " + execution.failure(f"running {script} on the hidden cases"))
    return [_tool_run(execution.out / f"case-{index}") for index in range(count)]


def _tool_run(folder: Path) -> ToolRun:
    try:
        record = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        record = {}
    code = record.get("returncode") if isinstance(record, dict) else None
    output = record.get("output") if isinstance(record, dict) else ""
    return ToolRun(folder, code if isinstance(code, int) and not isinstance(code, bool) else None,
                   output if isinstance(output, str) else "", _prompts(folder / "llm.log"),
                   _queries(folder / "papers.jsonl"))


def report(label: str, checks: dict[str, bool], run: ToolRun) -> list[bool]:
    """Print one case's checks (the grader's output says what failed) and return the outcomes."""
    print(f"{label}:")
    for name, passed in checks.items():
        print(f"  [{'x' if passed else ' '}] {name}")
    if not run.ok:
        print("  tool output (end): " + (run.output[-OUTPUT_SHOWN:] if run.returncode is not None
                                          else "(killed at the timeout)"))
    return list(checks.values())


def _prompts(log: Path) -> list[str]:
    if log.is_symlink() or not log.is_file():
        return []
    parts = log.read_text(encoding="utf-8", errors="replace").split("===== PROMPT =====\n")
    return [part.split("\n===== ANSWER =====\n", 1)[0] for part in parts[1:]]


def _queries(log: Path) -> list[str]:
    if log.is_symlink() or not log.is_file():
        return []
    queries = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("query"), str):
            queries.append(record["query"])
    return queries

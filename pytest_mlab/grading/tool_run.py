"""Run an agent-written command-line tool for grading, away from its workspace.

The LLM-tool tasks (literature review, BibTeX generation) grade a program, not a file of
predictions. Their graders copy the workspace's regular files into a scratch folder, put the
task's own helper modules (LLM.py, papers.py) over any copies the agent changed, and run
``python SCRIPT ARGS`` there with a scripted LLM and a local paper index (named by environment
variables the helpers read), a timeout, no API keys, and the whole process group killed at
the end. The helpers log every LLM call and search into a folder the tool is not told about.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.sandbox.environ import clean_environment

OUTPUT_LIMIT = 20_000


@dataclass(frozen=True)
class ToolRun:
    """What running the tool did."""

    folder: Path          # where the tool ran: its output files are here
    returncode: int | None  # None: killed at the timeout
    output: str           # stdout and stderr, the last OUTPUT_LIMIT characters
    llm_prompts: list[str]
    queries: list[str]

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def run_tool(workspace: Path, scratch: Path, command: list[str], *, helpers: list[Path], llm_script: Path,
             papers: Path, timeout: float, inputs: dict[str, str] | None = None) -> ToolRun:
    """Run ``python *command`` on a copy of ``workspace`` in ``scratch/tool``; ``inputs`` are
    files (name -> text) written there first."""
    folder, logs = scratch / "tool", scratch / "logs"
    shutil.copytree(workspace, folder, symlinks=True, ignore=_not_regular)
    logs.mkdir()
    for helper in helpers:
        shutil.copyfile(helper, folder / helper.name)  # follows links: the task's real helper
    for name, text in (inputs or {}).items():
        (folder / name).write_text(text, encoding="utf-8")
    env = clean_environment({"MLAB_TOOL_LLM_SCRIPT": str(llm_script), "MLAB_TOOL_PAPERS": str(papers),
                             "MLAB_TOOL_LLM_LOG": str(logs / "llm.log"),
                             "MLAB_TOOL_PAPERS_LOG": str(logs / "papers.jsonl"), "HOME": str(scratch)})
    process = subprocess.Popen([sys.executable, *command], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        returncode = None
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # children the tool left behind, too
        except ProcessLookupError:
            pass
    if returncode is None:
        output, _ = process.communicate()
    text = output.decode("utf-8", errors="replace")[-OUTPUT_LIMIT:]
    return ToolRun(folder, returncode, text, _prompts(logs / "llm.log"), _queries(logs / "papers.jsonl"))


def write_fixtures(hidden: Path, papers: list[dict], llm_script: dict, cases: list[dict]) -> None:
    """The hidden files a tool task's grader reads: papers.json, llm_script.yaml, cases.json."""
    import yaml

    (hidden / "papers.json").write_text(json.dumps(papers, indent=1) + "\n")
    (hidden / "llm_script.yaml").write_text(yaml.safe_dump(llm_script, sort_keys=False, width=1000))
    (hidden / "cases.json").write_text(json.dumps(cases, indent=1) + "\n")


def report(label: str, checks: dict[str, bool], run: ToolRun) -> list[bool]:
    """Print one case's checks (the grader's output says what failed) and return the outcomes."""
    print(f"{label}:")
    for name, passed in checks.items():
        print(f"  [{'x' if passed else ' '}] {name}")
    if not run.ok:
        print("  tool output (end): " + (run.output[-800:] if run.returncode is not None else "(killed at the timeout)"))
    return list(checks.values())


def _not_regular(directory: str, names: list[str]) -> set[str]:
    """Symbolic links and special files stay behind: only the agent's own files are copied."""
    return {name for name in names
            if os.path.islink(os.path.join(directory, name))
            or not (os.path.isfile(os.path.join(directory, name)) or os.path.isdir(os.path.join(directory, name)))}


def _prompts(log: Path) -> list[str]:
    if not log.is_file():
        return []
    parts = log.read_text(encoding="utf-8", errors="replace").split("===== PROMPT =====\n")
    return [part.split("\n===== ANSWER =====\n", 1)[0] for part in parts[1:]]


def _queries(log: Path) -> list[str]:
    if not log.is_file():
        return []
    return [json.loads(line)["query"] for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]

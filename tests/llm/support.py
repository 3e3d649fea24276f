"""Sub-run projects for LLM tests: the toy project plus the JSON-speaking test agent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_mlab.trace import read_trace
from tests.helpers import UNRELATED_PLUGINS, copy_toy_project

HERE = Path(__file__).resolve().parent

WRITE_ANSWER = {"action": "Write File", "input": {"file_name": "submission.txt", "content": "100"}}
RUN_STARTER = {"action": "Execute Script", "input": {"script_name": "train.py"}}
SUBMIT = {"action": "Final Answer", "input": {"final_answer": "wrote the exact sum"}}


def llm_project(root: Path, agent_llm: str = "main: gpt-4", options: dict[str, Any] | None = None) -> Path:
    """The toy project with agent ``tool`` (implementation tests' ``tool_agent.ToolAgent``);
    ``options``: the agent spec's ``options:`` (sampling, llm_attempts)."""
    copy_toy_project(root)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    shutil.copy(HERE / "tool_agent.py", root / "tool_agent.py")
    (root / "agents" / "tool.yaml").write_text(
        "kind: Agent\nname: tool\nimplementation: tool_agent:ToolAgent\n"
        f"llm: {{{agent_llm}}}\n"
        "actions: [Write File, Execute Script, Final Answer]\n"
        + (f"options: {json.dumps(options)}\n" if options else ""))
    return root


def script(*responses: Any) -> str:
    """A scripted-responses YAML file: dicts are JSON actions for the main role, ``(role, text)``
    pairs are role-tagged entries."""
    entries = []
    for response in responses:
        if isinstance(response, tuple):
            entries.append({"role": response[0], "text": response[1]})
        else:
            entries.append(json.dumps(response))
    return json.dumps(entries, indent=1)  # JSON is YAML


def run_project(pytester: pytest.Pytester, root: Path, *args: str) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
                                           "--mlab-cache", str(root / ".cache"), "--agent=tool", *args, timeout=300)
    out = next((arg.split("=", 1)[1] for arg in args if arg.startswith("--mlab-out=")), "mlab-results")
    path = root / out / "results.json"
    return result, json.loads(path.read_text()) if path.exists() else {}


def only_run(results: dict) -> dict:
    assert len(results["runs"]) == 1, results
    return results["runs"][0]


def llm_records(trace: str | Path) -> list[dict[str, Any]]:
    return [record for record in read_trace(trace) if record.get("type") == "llm"]


def steps(trace: str | Path) -> list[tuple[str, Any]]:
    return [(r["action"], r["arguments"]) for r in read_trace(trace) if r.get("type") == "step"]

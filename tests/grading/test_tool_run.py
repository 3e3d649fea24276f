"""run_tool(): the LLM-tool tasks' graders run the agent's tool on a copy, with the task's helpers."""

from __future__ import annotations

import json
import os
import textwrap
import time
from pathlib import Path

import pytest

from pytest_mlab.grading.tool_run import run_tool

HELPERS_DIR = Path(__file__).resolve().parents[2] / "task_assets" / "literature-review-tool" / "env"
HELPERS = [HELPERS_DIR / "LLM.py", HELPERS_DIR / "papers.py"]


@pytest.fixture
def fixtures(tmp_path):
    script = tmp_path / "llm.yaml"
    script.write_text("rules:\n  - {pattern: 'hello', reply: 'scripted hello'}\ndefault: 'scripted default'\n")
    papers = tmp_path / "papers.json"
    papers.write_text(json.dumps([{"id": "2101.00001", "title": "Graph networks", "authors": ["A B"], "year": 2021,
                                   "abstract": "About graphs.", "url": "u", "category": "cs.LG"}]))
    return script, papers


def tool(workspace: Path, code: str) -> Path:
    workspace.mkdir(exist_ok=True)
    (workspace / "tool.py").write_text(textwrap.dedent(code))
    return workspace


def test_the_tasks_helpers_replace_the_agents_copies(tmp_path, fixtures):
    workspace = tool(tmp_path / "ws", """
        import LLM, papers
        print(LLM.complete_text("say hello", "calls.log"))
        print([p["id"] for p in papers.search_papers("graph networks")])
    """)
    (workspace / "LLM.py").write_text("def complete_text(prompt, log_file=None):\n    return 'forged'\n")
    run = run_tool(workspace, tmp_path / "scratch", ["tool.py"], helpers=HELPERS, llm_script=fixtures[0],
                   papers=fixtures[1], timeout=60)
    assert run.ok, run.output
    assert "scripted hello" in run.output and "forged" not in run.output
    assert "['2101.00001']" in run.output
    assert run.llm_prompts == ["say hello"] and run.queries == ["graph networks"]
    assert (run.folder / "calls.log").is_file()
    assert "forged" in (workspace / "LLM.py").read_text(), "the workspace itself is left alone"


def test_no_keys_no_links_and_inputs_written(tmp_path, fixtures, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    secret = tmp_path / "secret.txt"
    secret.write_text("hidden answer")
    workspace = tool(tmp_path / "ws", """
        import os
        print("key:", os.environ.get("OPENAI_API_KEY"))
        print("link:", os.path.exists("link.txt"))
        print("input:", open("in.txt").read())
    """)
    (workspace / "link.txt").symlink_to(secret)
    run = run_tool(workspace, tmp_path / "scratch", ["tool.py"], helpers=HELPERS, llm_script=fixtures[0],
                   papers=fixtures[1], timeout=60, inputs={"in.txt": "the paragraph"})
    assert run.ok, run.output
    assert "key: None" in run.output and "link: False" in run.output and "input: the paragraph" in run.output


def test_a_hanging_tool_and_its_children_are_killed(tmp_path, fixtures):
    workspace = tool(tmp_path / "ws", """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open("child.pid", "w").write(str(child.pid))
        time.sleep(300)
    """)
    run = run_tool(workspace, tmp_path / "scratch", ["tool.py"], helpers=HELPERS, llm_script=fixtures[0],
                   papers=fixtures[1], timeout=3)
    assert run.returncode is None and not run.ok
    pid = int((run.folder / "child.pid").read_text())
    for _ in range(50):  # the kill is sent; the child is reaped by init shortly after
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        if Path(f"/proc/{pid}/stat").is_file() and Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.1)
    else:
        pytest.fail("the tool's child process is still running")


def test_a_crashing_tool_reports_its_output(tmp_path, fixtures):
    workspace = tool(tmp_path / "ws", "raise SystemExit('usage: tool.py TOPIC OUT')\n")
    run = run_tool(workspace, tmp_path / "scratch", ["tool.py"], helpers=HELPERS, llm_script=fixtures[0],
                   papers=fixtures[1], timeout=60)
    assert run.returncode == 1 and "usage: tool.py TOPIC OUT" in run.output

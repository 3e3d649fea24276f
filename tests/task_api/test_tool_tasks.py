"""The LLM-tool tasks' measure step (task_assets/literature-review-tool/measure.py, shared with
bibtex-generation) and what their graders read back (pytest_mlab/task_api/_tool_tasks.py): the
tool runs in the sandbox on a copy of the workspace, with the task's helpers and inputs."""

from __future__ import annotations

import json
import textwrap
import uuid
from pathlib import Path

import pytest

from pytest_mlab.data.cache import PreparedData
from pytest_mlab.errors import InvalidSubmission
from pytest_mlab.grading.measure import measure
from pytest_mlab.sandbox.base import SandboxOptions
from pytest_mlab.task_api import ToolRun, score_tool_cases, write_fixtures
from pytest_mlab.task_api._tool_tasks import tool_runs
from pytest_mlab.trace import SnapshotStore
from tests.sandbox.processes import tagged_processes
from tests.tasks.support import ASSETS, task_spec

TASK = "literature-review-tool"
PAPERS = [{"id": "2101.00001", "title": "Graph networks", "authors": ["A B"], "year": 2021, "abstract": "About graphs.",
           "url": "u", "category": "cs.LG"}]
SCRIPT = {"rules": [{"pattern": "hello", "reply": "scripted hello"}], "default": "scripted default"}


def run_tool(tmp_path: Path, kind: str, code: str, *, cases: list[dict] | None = None, timeout: float = 60,
             files: dict[str, str] | None = None) -> list[ToolRun]:
    """``tool.py`` (``code``) run by the task's measure step on each case; the runs read back."""
    cases = cases or [{"args": []}]
    hidden = tmp_path / "data" / "hidden"
    hidden.mkdir(parents=True)
    (tmp_path / "data" / "public").mkdir()
    write_fixtures(hidden, PAPERS, SCRIPT, [{} for _ in cases],
                   {"script": "tool.py", "outputs": ["out.txt"], "timeout": timeout, "cases": cases},
                   ASSETS / TASK / "env")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "tool.py").write_text(textwrap.dedent(code))
    for name, text in (files or {}).items():
        (workspace / name).write_text(text)
    store = SnapshotStore(tmp_path / "snapshots")
    task = task_spec(TASK)
    measured = measure(task, store, store.snapshot(workspace).id, PreparedData(tmp_path / "data" / "public", hidden),
                       kind, SandboxOptions.for_task(task, task.limits, "test-tool"), tmp_path / "grade")
    return tool_runs(measured, len(cases), "tool.py")


def test_the_tasks_helpers_replace_the_agents_copies(kind, tmp_path):
    (run,) = run_tool(tmp_path, kind, """
        import LLM, papers
        print(LLM.complete_text("say hello", "calls.log"))
        print([p["id"] for p in papers.search_papers("graph networks")])
        open("out.txt", "w").write("written")
    """, files={"LLM.py": "def complete_text(prompt, log_file=None):\n    return 'forged'\n"})
    assert run.ok, run.output
    assert "scripted hello" in run.output and "forged" not in run.output
    assert "['2101.00001']" in run.output
    assert run.llm_prompts == ["say hello"] and run.queries == ["graph networks"]
    assert (run.folder / "out.txt").read_text() == "written"


def test_each_case_gets_its_arguments_and_files_no_keys_and_no_links(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-tool")
    runs = run_tool(tmp_path, kind, """
        import os, sys
        print("key:", os.environ.get("OPENAI_API_KEY"))
        print("args:", sys.argv[1:])
        print("input:", open("in.txt").read() if os.path.exists("in.txt") else None)
        print("measure folder:", os.path.exists(".mlab-measure"))
        print("papers folder:", sorted(os.listdir(os.path.dirname(os.environ["MLAB_TOOL_PAPERS"]))))
    """, cases=[{"args": ["first"], "files": {"in.txt": "the paragraph"}}, {"args": ["second", "x"]}])
    assert [run.ok for run in runs] == [True, True]
    assert "key: None" in runs[0].output and "args: ['first']" in runs[0].output
    assert "input: the paragraph" in runs[0].output and "input: None" in runs[1].output
    assert "args: ['second', 'x']" in runs[1].output and "measure folder: False" in runs[0].output
    assert ("papers folder: ['LLM.py', 'llm_script.yaml', 'papers.json', 'papers.py', 'tool_cases.json']"
            in runs[0].output), "the tool's inputs only: no cases.json, no answers"


def test_a_hanging_tool_and_everything_it_started_are_killed(kind, tmp_path):
    tag = f"mlab-tool-child-{uuid.uuid4().hex}"
    (run,) = run_tool(tmp_path, kind, f"""
        import os, subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{tag}"])
        if os.fork() == 0:  # a detached grandchild, as a daemon makes one
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", "{tag}"])
            os._exit(0)
        time.sleep(300)
    """, timeout=3)
    assert run.returncode is None and not run.ok
    assert tagged_processes(tag) == []


def test_a_crashing_tool_reports_its_output(tmp_path):
    (run,) = run_tool(tmp_path, "local", "raise SystemExit('usage: tool.py TOPIC OUT')\n")
    assert run.returncode == 1 and "usage: tool.py TOPIC OUT" in run.output


def recorded_execution(measured: Path, returncode: int, output_tail: str = "") -> Path:
    """The out/ folder of the one execution of a measure step, recorded as the harness records it."""
    folder = measured / "submission" / "0"
    (folder / "out").mkdir(parents=True)
    (folder / "exec.json").write_text(json.dumps({"subject": "submission", "returncode": returncode,
                                                  "timed_out": False, "timeout": 600, "cpu_time": 0.1,
                                                  "output_tail": output_tail, "truncated_reason": None}))
    return folder / "out"


def test_a_measurement_that_did_not_get_through_the_cases_is_invalid(tmp_path):
    recorded_execution(tmp_path / "measured", 1, "MemoryError")
    with pytest.raises(InvalidSubmission, match="tool.py: running tool.py on the hidden cases exited with status 1 "
                                                r".*MemoryError"):
        tool_runs(tmp_path / "measured", 2, "tool.py")


def test_the_shared_score_is_the_fraction_of_checks_passed_over_every_case(tmp_path, capsys):
    workspace, answers = tmp_path / "ws", tmp_path / "answers"
    workspace.mkdir(), answers.mkdir()
    (answers / "cases.json").write_text(json.dumps([{"n": 1}, {"n": 2}]))
    out = recorded_execution(tmp_path / "measured", 0)
    (out / "result.json").write_text(json.dumps({"cases": 2}))
    for index in range(2):
        (out / f"case-{index}").mkdir()
        (out / f"case-{index}" / "run.json").write_text(json.dumps({"returncode": 0, "output": ""}))

    def score() -> float:
        return score_tool_cases(workspace, answers, tmp_path / "measured", script="tool.py", usage="IN OUT",
                                label=lambda case: f"case {case['n']}",
                                checks=lambda case, run: {"it runs": run.ok, "n is even": case["n"] % 2 == 0})

    with pytest.raises(InvalidSubmission, match=r"^tool.py: file not found in the workspace; the grader runs "
                                                r"python tool.py IN OUT$"):
        score()
    (workspace / "tool.py").write_text("")
    assert score() == 0.75
    assert "case 1:\n  [x] it runs\n  [ ] n is even\ncase 2:\n  [x] it runs\n  [x] n is even\n" == capsys.readouterr().out

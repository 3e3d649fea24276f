"""report.html: self-contained, and untrusted text stays text (tests/results/test_report_browser.py
opens it in a real headless Chromium)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_mlab.results import html
from pytest_mlab.results.environment import describe_environment
from pytest_mlab.task_runtime import choice
from pytest_mlab.task_runtime.build import lock_digest
from pytest_mlab.task_runtime.choice import describe
from pytest_mlab.results.html import write_report
from tests.results.builders import run, saved_run
from tests.results.support import COMPLETION, ENVIRONMENT, EVIL, PROMPT, STEPS, report


def page_data(path: Path) -> dict:
    return json.loads(path.read_text().split('id="mlab-data">', 1)[1].split("</script>", 1)[0])


def test_the_report_is_one_file_with_everything_inline(tmp_path):
    path, _ = report(tmp_path)
    page = path.read_text()
    assert page.count("data:image/png;base64,") == len(list((tmp_path / "plots").glob("*.png"))) == 5
    assert not re.search(r'(src|href)="(https?:|//|file:)', page)  # nothing to fetch
    parsed = {(entry["task"], entry["agent"]): entry for entry in page_data(path)["runs"]}
    digits = parsed["digits", "reference"]
    assert digits["steps"] == STEPS and len(digits["step_records"]) == STEPS  # the count stays a count
    assert digits["step_records"][1]["observation"] == EVIL
    assert parsed["diabetes", "baseline"]["improvement"] is None  # infinity is not JSON a browser reads
    (call,) = digits["step_records"][0]["llm"]
    assert call["prompt_tokens"] == 1000 and call["prompt"] == PROMPT and call["completion"] == COMPLETION
    diff = digits["step_records"][1]["diff"][0]
    assert diff["path"] == "train.py" and "+print(2)" in diff["text"] and "-print(1)" in diff["text"]
    assert parsed["digits", "research"]["step_records"] == [] and parsed["digits", "research"]["infrastructure"]


def test_the_header_is_the_recorded_environment_and_the_runs_sandboxes_and_models(tmp_path):
    header = page_data(report(tmp_path)[0])["header"]
    assert {key: header[key] for key in ENVIRONMENT} == ENVIRONMENT
    assert header["sandboxes"] == ["local"] and header["llms"] == ["gpt-4"]
    assert header["isolation"] == "isolated (bwrap)"


def test_without_a_recorded_environment_the_header_describes_this_machine(tmp_path):
    header = page_data(write_report(tmp_path, [run()], [], settings={"invocation_dir": str(tmp_path)}))["header"]
    assert header["commit"] == "unknown" and header["uncommitted_changes"] is None  # not a git checkout
    assert header["cpus"] == os.cpu_count() and header["hostname"] == platform.node() and header["date"]
    assert header["llms"] == [] and isinstance(header["gpus"], list)
    assert header["agents_python"] == describe()  # what agents' scripts ran with: the lock's digest by default


def test_the_agents_python_names_the_runtime_chosen(tmp_path, monkeypatch):
    monkeypatch.setenv(choice.VARIABLE, "host")
    assert describe_environment(tmp_path)["agents_python"].startswith("host (")
    monkeypatch.setenv(choice.VARIABLE, choice.LOCKED)
    assert describe_environment(tmp_path)["agents_python"] == f"locked (requirements.lock {lock_digest()})"


def test_the_commit_is_the_checkouts(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    for command in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(tmp_path), *command], check=True)
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    environment = describe_environment(tmp_path)
    assert environment["commit"] == head and environment["uncommitted_changes"] is False


def test_prompts_and_completions_are_whole_up_to_a_generous_cap(tmp_path):
    huge = "x" * (html.MAX_LLM_TEXT + 10)
    result = saved_run(tmp_path / "runs" / "a", [("Final Answer", {}, "done")], run(), extra_records=[
        {"type": "llm", "role": "main", "model": "m", "prompt": huge, "completion": None, "failure": "provider error",
         "message": "HTTP 503"}])
    after = {"type": "llm", "role": "fast", "model": "m", "prompt": "after the last step", "completion": "late"}
    with open(tmp_path / "runs" / "a" / "trace.jsonl", "a") as handle:
        handle.write(json.dumps(after) + "\n")
    entry = page_data(write_report(tmp_path, [result], []))["runs"][0]
    (call,) = entry["step_records"][0]["llm"]
    assert call["prompt"].startswith("x" * html.MAX_LLM_TEXT) and call["prompt"].endswith("(10 more characters in the trace)")
    assert call["completion"] is None and (call["failure"], call["message"]) == ("provider error", "HTTP 503")
    assert [late["prompt"] for late in entry["late_llm"]] == ["after the last step"]


def test_untrusted_text_never_appears_as_markup(tmp_path):
    page = report(tmp_path)[0].read_text()
    assert "<script>window.pwned" not in page and "<img src=x" not in page
    assert page.count("</script>") == 2  # the data block and the page's own script


def test_each_run_says_how_the_papers_rule_counts_it(tmp_path):
    runs = [run(), run(seed=1, end_reason="timeout", success=False, passed=False, failure="timeout"),
            run(seed=2, agent="research", llm="gpt-4", end_reason="crashed", success=False, passed=False)]
    parsed = page_data(write_report(tmp_path, runs, []))
    assert [entry["paper"] for entry in parsed["runs"]] == [
        {"counted": True, "success": True, "why": None},
        {"counted": False, "success": False, "why": "dropped: timeout"},
        {"counted": True, "success": False, "why": "counted as failed: crashed"}]
    (group, research) = parsed["aggregate"]["groups"]
    assert (group["paper_runs"], group["paper_dropped"], research["paper_runs"]) == (1, 1, 1)

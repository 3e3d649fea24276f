"""Helpers shared by the results tests: a report of three constructed runs holding hostile text
(test_html.py, test_report_browser.py), and a function run in several processes at once, as xdist
workers would (the budget tests)."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from pytest_mlab.results.aggregate import aggregate
from pytest_mlab.results.html import write_report
from pytest_mlab.results.plots import write_plots
from pytest_mlab.trace.step_scores import STEP_SCORES
from tests.results.builders import run, saved_run

EVIL = '</script><script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> & "quotes"'
PROMPT = "You are a helpful research assistant.\nResearch Problem: predict the digits." + EVIL
COMPLETION = "Reflection: the script ran.\nAction: Final Answer"
STEPS = 9
ENVIRONMENT = {"date": "2024-05-01T12:00:00+0000", "commit": "0123abcd", "uncommitted_changes": False,
               "hostname": "lab-7", "platform": "Linux-6.1-x86_64", "python": "3.11.7", "cpus": 16,
               "gpus": ["NVIDIA H100"], "agents_python": "locked (requirements.lock 0123456789abcdef)"}


def report(tmp_path: Path) -> tuple[Path, list]:
    """Three runs: one of digits with 9 steps, LLM calls and a score curve; a failed diabetes run
    whose message is hostile; a digits run whose grader crashed (no run folder)."""
    steps = [("Write File", {"train.py": "print(1)\n"}, "File train.py written successfully."),
             ("Write File", {"train.py": "print(2)\nprint('new line')\n"}, EVIL),
             ("Execute Script", {}, "EnvError: no such script")]
    steps += [("Execute Script", {"train.py": f"print({n})\n"}, f"output {n}") for n in range(len(steps) + 1, STEPS + 1)]
    first = saved_run(tmp_path / "runs" / "a", steps, run(tokens=1234, cost=0.05, steps=STEPS), extra_records=[
        {"type": "llm", "role": "main", "model": "gpt-4", "purpose": "step", "prompt": PROMPT, "completion": COMPLETION,
         "prompt_tokens": 1000, "completion_tokens": 234, "cost": 0.05, "cached": False, "attempts": 1}])
    (tmp_path / "runs" / "a" / STEP_SCORES).write_text(json.dumps({"best_improvement": 0.5, "steps": [
        {"step": 1, "snapshot": "x", "score": None, "improvement": None, "invalid_reason": "no submission"},
        {"step": 2, "snapshot": "y", "score": 0.9, "improvement": 0.5, "invalid_reason": None}]}))
    second = run("diabetes", "baseline", message=EVIL, passed=False, success=False, improvement=float("inf"),
                 failure="below threshold")
    third = run("digits", "research", llm="gpt-4", passed=False, success=False, valid=False, score=None,
                improvement=None, failure="grader error", infrastructure=True,
                message="grader error: the grader failed: KeyError: 'answer'")
    runs = [first, second, third]
    plots = write_plots(tmp_path, aggregate(runs))
    return write_report(tmp_path, runs, plots, title=EVIL, settings={"environment": ENVIRONMENT,
                                                                     "isolation": "isolated (bwrap)"}), runs


def in_processes(target, out_dir, count: int) -> None:
    """``target(out_dir, index)`` in ``count`` processes at once, as xdist workers would."""
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=target, args=(str(out_dir), index)) for index in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

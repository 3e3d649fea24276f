"""How the starter's run ended, read back from real Execute Script steps in a trace: the wording
that actions/execute.py writes is what grading/starter_run.py reads."""

from __future__ import annotations

from pathlib import Path

from pytest_mlab.grading.starter_run import starter_run
from pytest_mlab.spec.models import Limits
from pytest_mlab.trace import read_trace
from tests.env.support import make_environment

CRASH = "print('loading')\nfor i in range(8):\n    print('line', i, file=__import__('sys').stderr)\n" \
        "raise ValueError('setting an array element with a sequence.')\n"


def records(tmp_path: Path, files: dict[str, str], *scripts: str, limits: Limits | None = None) -> list[dict]:
    env = make_environment(tmp_path, files=files, limits=limits)
    for script in scripts:
        env.step("Execute Script", {"script_name": script})
    env.trace.close()
    return read_trace(tmp_path / "trace.jsonl")


def test_a_crash_gives_its_exit_code_and_the_last_lines_of_its_error(tmp_path: Path) -> None:
    run = starter_run(records(tmp_path, {"train.py": CRASH}, "train.py"), "train.py")
    assert run is not None and run.exit_code == 1 and not run.finished
    lines = run.ending.splitlines()
    assert len(lines) == 5 and lines[0] == "line 7" and lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: setting an array element with a sequence."
    assert run.how() == "failed with exit code 1"
    assert run.error_ending().endswith("\n  ValueError: setting an array element with a sequence.")


def test_a_starter_that_runs_to_the_end_and_the_last_run_counts(tmp_path: Path) -> None:
    trace = records(tmp_path, {"train.py": "print('ok')\n", "other.py": "raise SystemExit(3)\n"},
                    "other.py", "./train.py")
    run = starter_run(trace, "train.py")
    assert run is not None and run.finished and run.how() == "ran to the end (exit code 0)"
    assert run.error_ending() == ""
    assert starter_run(trace, "other.py").exit_code == 3
    assert starter_run(trace, "missing.py") is None  # never executed: nothing is known of it


def test_a_starter_stopped_at_its_time_limit_did_not_run_to_the_end(tmp_path: Path) -> None:
    trace = records(tmp_path, {"train.py": "import time\ntime.sleep(30)\n"}, "train.py",
                    limits=Limits(execute_timeout=1, max_steps=10))
    run = starter_run(trace, "train.py")
    assert run is not None and run.exit_code is None and not run.finished
    assert run.how().startswith("did not run to the end (the script was stopped after 1.0s (time limit)")

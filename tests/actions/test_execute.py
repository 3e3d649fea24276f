"""Execute Script through the Environment: output, failures, time-outs, process trees, output caps, secrets."""

from __future__ import annotations

import os
import time

from pytest_mlab.spec.models import Limits
from tests.env.support import make_environment


def run(tmp_path, source: str, *, limits: Limits | None = None) -> tuple[str, object]:
    env = make_environment(tmp_path, files={"script.py": source},
                           limits=limits or Limits(execute_timeout=20, max_steps=10))
    return env.step("Execute Script", {"script_name": "script.py"}), env


def test_output_is_returned_with_the_papers_header(tmp_path):
    observation, _ = run(tmp_path, "print('accuracy 0.5')")
    assert observation == "The script has been executed. Here is the output:\naccuracy 0.5\n"


def test_a_failing_script_shows_its_error_stream_only(tmp_path):
    observation, env = run(tmp_path, "print('before')\nraise ValueError('bad shape')")
    assert observation.startswith("The script has been executed and failed with exit code 1. Here is the output:\n"
                                  "Traceback")
    assert "ValueError: bad shape" in observation and "before" not in observation
    assert not env.done


def test_a_failing_script_with_a_silent_error_stream_shows_what_it_printed(tmp_path):
    observation, _ = run(tmp_path, "import sys\nprint('no data found')\nsys.exit(2)")
    assert observation == ("The script has been executed and failed with exit code 2. Here is the output:\n"
                           "no data found\n")


def test_a_successful_script_shows_only_what_it_printed(tmp_path):
    observation, _ = run(tmp_path, "import sys\nprint('accuracy 0.5')\nsys.stderr.write('a warning\\n')")
    assert observation == "The script has been executed. Here is the output:\naccuracy 0.5\n"


def test_a_successful_script_that_only_logs_to_stderr_shows_its_log(tmp_path):
    observation, _ = run(tmp_path, "import sys\nsys.stderr.write('epoch 1: loss 0.25\\n')")
    assert observation == "The script has been executed. Here is the output:\nepoch 1: loss 0.25\n"


def test_missing_script_and_non_python_file(tmp_path):
    observation, env = run(tmp_path, "")
    assert env.step("Execute Script", {"script_name": "nope.py"}).startswith("EnvError: the script 'nope.py' does not")
    (env.sandbox.workspace / "run.sh").write_text("echo hi")
    assert "not a .py file" in env.step("Execute Script", {"script_name": "run.sh"})


def test_script_past_its_timeout_is_stopped(tmp_path):
    started = time.monotonic()
    observation, env = run(tmp_path, "import time\nprint('started', flush=True)\ntime.sleep(60)",
                           limits=Limits(execute_timeout=1, max_steps=10))
    assert time.monotonic() - started < 15
    assert observation.startswith("EnvError: the script was stopped after 1.0s (time limit)")
    assert "started" in observation
    assert not env.done  # the agent may fix the script and try again


def test_background_child_does_not_outlive_the_script(tmp_path):
    marker = tmp_path / "survived.txt"
    source = ("import subprocess, sys\n"
              "child = 'import sys, time; time.sleep(2); open(sys.argv[1], \"w\").write(\"x\")'\n"
              f"subprocess.Popen([sys.executable, '-c', child, {str(marker)!r}])\n"
              "print('spawned')\n")
    started = time.monotonic()
    observation, _ = run(tmp_path, source)
    assert "spawned" in observation
    assert time.monotonic() - started < 10
    time.sleep(3)
    assert not marker.exists()


def test_hundred_megabytes_of_output_are_capped(tmp_path):
    source = "import sys\nchunk = 'x' * 1048576\nfor _ in range(100):\n    sys.stdout.write(chunk)\nprint('END')\n"
    observation, _ = run(tmp_path, source, limits=Limits(execute_timeout=60, output_limit=64 * 1024))
    assert len(observation) < 100 * 1024
    assert "bytes of output omitted" in observation
    assert observation.rstrip().endswith("END")


def test_api_keys_are_not_passed_to_scripts(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-should-not-leak")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-should-not-leak")
    observation, _ = run(tmp_path, "import os\nprint(sorted(os.environ))\nprint(os.environ.get('OPENAI_API_KEY'))")
    assert "sk-test-should-not-leak" not in observation and "OPENAI_API_KEY" not in observation
    assert "ANTHROPIC_API_KEY" not in observation


def test_script_runs_in_the_workspace(tmp_path):
    observation, env = run(tmp_path, "import os\nprint(os.getcwd())\nopen('out.txt', 'w').write('ok')")
    assert os.path.realpath(str(env.sandbox.workspace)) in observation
    assert (env.sandbox.workspace / "out.txt").read_text() == "ok"

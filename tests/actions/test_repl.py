"""Python REPL runs in the sandbox (a child process in the workspace) and replays earlier commands."""

from __future__ import annotations

import os

from pytest_mlab.spec.models import Limits
from tests.agents.fakes import environment

ACTIONS = ("Python REPL",)


def repl(env, command):
    return env.step("Python REPL", {"command": command})


def test_state_persists_and_final_expressions_print(tmp_path):
    env = environment(tmp_path, ACTIONS)
    assert repl(env, "import math\nx = 21") == "(the command printed nothing)"
    assert repl(env, "x * 2") == "42\n"
    assert repl(env, "print(math.sqrt(x * 2 + 7))") == "7.0\n"


def test_runs_in_a_child_process_in_the_workspace(tmp_path):
    env = environment(tmp_path, ACTIONS)
    assert repl(env, "import os; os.getpid()").strip() != str(os.getpid())
    assert repl(env, "os.getcwd()").strip() == repr(str((tmp_path / "ws").resolve()))
    assert "OPENAI_API_KEY" not in repl(env, "sorted(os.environ)")


def test_a_failing_command_shows_its_error_and_is_not_replayed(tmp_path):
    env = environment(tmp_path, ACTIONS)
    observation = repl(env, "open('log.txt', 'a').write('x')\n1 / 0")
    assert "ZeroDivisionError" in observation and "not kept" in observation
    repl(env, "y = 1")
    assert (tmp_path / "ws/log.txt").read_text() == "x"  # the failed command did not run again


def test_timeout_is_an_env_error(tmp_path):
    env = environment(tmp_path, ACTIONS, limits=Limits(max_steps=10, execute_timeout=1))
    observation = repl(env, "import time\nprint('started', flush=True)\ntime.sleep(30)")
    assert observation.startswith("EnvError: the command was stopped after")
    assert "started" in observation


def test_histories_of_two_runs_are_separate(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    first = environment(tmp_path / "a", ACTIONS)
    second = environment(tmp_path / "b", ACTIONS)
    repl(first, "secret = 1")
    assert "NameError" in repl(second, "secret")

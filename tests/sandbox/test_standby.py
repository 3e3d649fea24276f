"""The next command's shell, started ahead and waiting in the sandbox's cgroups (standby.py): a
command run through it must be indistinguishable from one started afresh."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_mlab.sandbox import LocalSandbox
from tests.env.support import make_environment

REPORT = """
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "stdin": sys.stdin.read(),
                  "pid": os.getpid(), "cgroups": open("/proc/self/cgroup").read(),
                  "fsize": __import__("resource").getrlimit(__import__("resource").RLIMIT_FSIZE)[0],
                  "env": os.environ.get("EXTRA")}))
"""
ODD_ARGUMENTS = [" spaced  out ", "back\\slash", "ünïcödé", "$HOME", "-n", "", "'quoted'", "a;b|c"]


@pytest.fixture()
def sb(tmp_path: Path) -> Iterator[LocalSandbox]:
    sandbox = LocalSandbox(tmp_path / "ws")
    (sandbox.files.root / "report.py").write_text(REPORT)
    sandbox.expect_commands()
    yield sandbox
    sandbox.close()


def report(sb: LocalSandbox, *args: str, **kwargs: object) -> dict:
    result = sb.exec([sb.python, "report.py", *args], timeout=60, output_limit=100_000, **kwargs)  # type: ignore[arg-type]
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def waiting_pid(sb: LocalSandbox) -> int:
    assert sb._standby is not None, "a shell waits for the next command"
    return sb._standby.proc.pid


def test_the_next_command_runs_in_the_waiting_shell_as_a_fresh_one_would(sb: LocalSandbox) -> None:
    fresh = report(sb, *ODD_ARGUMENTS, stdin="")  # input on stdin, even none: started afresh
    ahead = waiting_pid(sb)
    through_standby = report(sb, *ODD_ARGUMENTS)
    assert through_standby["pid"] == ahead
    assert fresh["pid"] != ahead
    for key in ("argv", "cwd", "stdin", "cgroups", "fsize", "env"):
        assert through_standby[key] == fresh[key], key
    assert through_standby["argv"] == ODD_ARGUMENTS
    assert through_standby["stdin"] == "", "stdin is /dev/null, as for a fresh command"


def test_a_shell_killed_while_waiting_does_not_lose_the_command(sb: LocalSandbox) -> None:
    report(sb)
    ahead = waiting_pid(sb)
    os.kill(ahead, 9)
    os.waitid(os.P_PID, ahead, os.WEXITED | os.WNOWAIT)  # dead before the command comes
    seen = report(sb, "still runs")
    assert seen["argv"] == ["still runs"] and seen["pid"] != ahead


def test_commands_the_shell_cannot_carry_start_afresh(sb: LocalSandbox) -> None:
    report(sb)
    for kwargs, args, check in (({}, ["two\nlines"], lambda seen: seen["argv"] == ["two\nlines"]),
                                ({"stdin": "fed"}, [], lambda seen: seen["stdin"] == "fed"),
                                ({"env": {"EXTRA": "yes"}}, [], lambda seen: seen["env"] == "yes")):
        ahead = waiting_pid(sb)
        seen = report(sb, *args, **kwargs)
        assert check(seen) and seen["pid"] != ahead
        assert not Path(f"/proc/{ahead}").exists(), "the unused shell is ended, not left behind"
    ahead = waiting_pid(sb)
    assert report(sb)["pid"] == ahead, "a new shell waits after a command started afresh"


def test_a_workspace_put_back_in_place_is_where_the_command_runs(sb: LocalSandbox, tmp_path: Path) -> None:
    report(sb)
    root = sb.files.root
    os.rename(root, tmp_path / "old")
    root.mkdir()
    (root / "report.py").write_text(REPORT)
    assert report(sb)["cwd"] == str(root)


def test_close_ends_the_waiting_shell(tmp_path: Path) -> None:
    sandbox = LocalSandbox(tmp_path / "ws")
    sandbox.expect_commands()
    sandbox.exec([sandbox.python, "-c", "pass"], timeout=60, output_limit=1000)
    ahead = waiting_pid(sandbox)
    sandbox.close()
    assert sandbox._standby is None
    with pytest.raises(ChildProcessError):
        os.waitpid(ahead, os.WNOHANG)  # reaped, not left a zombie
    assert not Path(f"/proc/{ahead}").exists()


def test_an_agent_run_finds_a_shell_waiting_for_its_first_command(tmp_path: Path) -> None:
    env = make_environment(tmp_path, files={"report.py": REPORT})
    try:
        ahead = waiting_pid(env.sandbox)  # type: ignore[arg-type]
        observation = env.step("Execute Script", {"script_name": "report.py"})
        assert json.loads(observation.split("\n", 1)[1])["pid"] == ahead
    finally:
        env.sandbox.close()
        env.trace.close()


def test_a_sandbox_for_one_command_keeps_no_shell_waiting(tmp_path: Path) -> None:
    """A measurement or a grading opens a sandbox, runs one command and closes it."""
    with LocalSandbox(tmp_path / "ws") as sandbox:
        sandbox.exec([sandbox.python, "-c", "pass"], timeout=60, output_limit=1000)
        assert sandbox._standby is None


INJECTOR = """
import os, subprocess, sys
if os.fork():  # the command returns; a detached survivor keeps trying for a few seconds
    sys.exit(0)
os.setsid()
import time
end = time.time() + 3
while time.time() < end:
    for pid in os.listdir("/proc"):
        try:
            if b"mlab-standby" in open(f"/proc/{pid}/cmdline", "rb").read():
                with open(f"/proc/{pid}/fd/0", "w") as stdin:
                    stdin.write("3\\n/bin/sh\\n-c\\ntouch injected\\n")
        except OSError:
            pass
    time.sleep(0.01)
"""


def test_a_survivor_of_the_last_command_cannot_hand_the_waiting_shell_a_command(sb: LocalSandbox) -> None:
    """The shell waits only once everything the last command left is killed: nothing can write
    the command line before the harness does."""
    (sb.files.root / "inject.py").write_text(INJECTOR)
    sb.exec([sb.python, "inject.py"], timeout=60, output_limit=1000)
    ahead = waiting_pid(sb)
    time.sleep(1)  # the agent thinks: the shell waits, the survivor (were it alive) tries
    seen = report(sb, "mine")
    assert seen["argv"] == ["mine"] and seen["pid"] == ahead
    assert not (sb.files.root / "injected").exists()

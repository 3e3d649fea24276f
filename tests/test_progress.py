"""Live progress: each running run keeps a status file current (engine), and the controller shows
which items run, at which step and for how long (plugin), also under pytest-xdist."""

from __future__ import annotations

import io
import os
import textwrap
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_mlab.agents import Agent
from pytest_mlab.data import prepare_data
from pytest_mlab.plugin.progress import _Screen, status_lines
from pytest_mlab.runner import run_item
from pytest_mlab.spec.plan import Settings, compile_plans
from pytest_mlab.spec.project import Project
from pytest_mlab.trace import TraceWriter
from pytest_mlab.trace.progress import GRADING, STEPPING, RunStatus, Status, progress_dir, read_statuses, remove_statuses
from tests.helpers import ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT, UNRELATED_PLUGINS, copy_toy_project, output_of

SESSION = "this-session"


def start(out: Path, name: str = "toy-mini-a-s0", session: str = SESSION) -> RunStatus:
    return RunStatus.start(out, name, nodeid=f"toy.yaml::{name}", run_id=name, session=session, max_steps=50)


def test_the_status_file_follows_the_trace_step_by_step(tmp_path):
    status = start(tmp_path)
    assert [s.phase for s in read_statuses(tmp_path, SESSION)] == ["setting up"]
    seen = []
    with TraceWriter(tmp_path / "trace.jsonl", observer=status.observe) as trace:
        trace.write({"type": "run"})
        seen.append(read_statuses(tmp_path, SESSION)[0])
        for step in (1, 2):
            trace.write({"type": "llm", "step": step + 1})  # records other than steps change nothing
            trace.write({"type": "step", "step": step, "action": "Execute Script"})
            seen.append(read_statuses(tmp_path, SESSION)[0])
    assert [(s.phase, s.step, s.max_steps) for s in seen] == [(STEPPING, 1, 50), (STEPPING, 2, 50), (STEPPING, 3, 50)]
    assert seen[0].since <= seen[1].since <= seen[2].since and seen[0].started == seen[2].started
    status.phase(GRADING)
    assert read_statuses(tmp_path, SESSION)[0].phase == GRADING
    status.close()
    assert read_statuses(tmp_path, SESSION) == [] and os.listdir(progress_dir(tmp_path)) == []


def test_a_shorter_record_is_padded_over_a_longer_one_and_a_stale_file_is_emptied_first(tmp_path):
    progress_dir(tmp_path).mkdir()
    (progress_dir(tmp_path) / "toy-mini-a-s0.json").write_text("x" * 5000)  # a killed session's file
    status = start(tmp_path)
    status.phase("preparing toy data (mini), which is a long phase name")
    status.phase("grading")
    (path,) = progress_dir(tmp_path).iterdir()
    assert read_statuses(tmp_path, SESSION)[0].phase == "grading" and path.read_text().endswith(" ")
    assert len(path.read_bytes()) < 400


def test_only_this_sessions_statuses_are_read_and_removed(tmp_path):
    start(tmp_path, "mine")
    other = start(tmp_path, "theirs", session="another-session")
    (progress_dir(tmp_path) / "caught-mid-write.json").write_text('{"nodeid": "x", "ru' + " " * 100)
    assert [s.run_id for s in read_statuses(tmp_path, SESSION)] == ["mine"]
    remove_statuses(tmp_path, SESSION)
    assert read_statuses(tmp_path, SESSION) == [] and read_statuses(tmp_path, "another-session") == [other.status]


def test_a_status_that_cannot_be_written_never_fails_the_run(tmp_path):
    (tmp_path / "out").write_text("a file where the results folder should be")
    status = start(tmp_path / "out")
    status.observe({"type": "step", "step": 1})
    status.close()


def test_data_preparation_says_when_it_prepares_and_when_it_waits(tmp_path):
    project = Project(TOY_PROJECT, ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT / "specs" / "tasks")
    task = project.task_from_file(TOY_PROJECT / "specs" / "tasks" / "toy.yaml")
    heard: list[str] = []
    prepare_data(task, "mini", tmp_path / "cache", notify=heard.append)
    prepare_data(task, "mini", tmp_path / "cache", notify=heard.append)  # in the cache: nothing to say
    assert heard == ["preparing toy data (mini)"]
    lock = open(tmp_path / "cache" / "toy" / ".mini.lock", "w")
    import fcntl

    fcntl.flock(lock, fcntl.LOCK_EX)  # another process prepares the same data
    waiter = threading.Thread(target=prepare_data, args=(task, "mini", tmp_path / "cache"),
                              kwargs={"notify": heard.append})
    waiter.start()
    for _ in range(1000):  # up to 10 s for the waiter to say it waits
        if len(heard) > 1:
            break
        waiter.join(0.01)
    lock.close()
    waiter.join()
    assert heard[1:] == ["waiting for toy data (mini)"]


class StatusReader(Agent):
    """Reads its own status file before each step: what the controller would see then."""

    seen: list[Status] = []

    def run(self, env):
        out = self.plan.out_dir
        for _ in range(3):
            StatusReader.seen.append(read_statuses(out, SESSION)[0])
            env.step("Write File", {"file_name": "submission.txt", "content": "100"})
        StatusReader.seen.append(read_statuses(out, SESSION)[0])
        env.step("Final Answer", {"final_answer": "done"})


def test_the_runner_keeps_the_status_current_and_removes_it_at_the_end(tmp_path):
    project = Project(TOY_PROJECT, ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT / "specs" / "tasks")
    task = project.task_from_file(TOY_PROJECT / "specs" / "tasks" / "toy.yaml")
    reference = project.agent("reference")
    agent = replace(reference, name="reader", implementation=f"{__name__}:StatusReader")
    settings = Settings(agents=(), agents_source="--agent", llm=None, seeds=1, variant="mini", sandbox="local",
                        out_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    plan = compile_plans(task, [(agent, project.agent_actions(reference))], settings)[0]
    StatusReader.seen = []

    result = run_item(plan, "toy.yaml::toy[mini-reader-s0]", settings, session=SESSION)

    assert result.passed, result.message
    assert [(s.phase, s.step) for s in StatusReader.seen] == [(STEPPING, n) for n in (1, 2, 3, 4)]
    assert {(s.nodeid, s.run_id, s.max_steps) for s in StatusReader.seen} == {
        ("toy.yaml::toy[mini-reader-s0]", "toy[mini-reader-s0]", 10)}
    assert read_statuses(tmp_path / "out", SESSION) == []


def test_the_status_lines_name_each_running_item_its_step_and_times():
    now = 1000.0
    statuses = [Status("a", "toy[mini-a-s0]", SESSION, now - 65, STEPPING, now - 12, step=3, max_steps=50),
                Status("b", "toy[mini-b-s0]", SESSION, now - 4, "preparing toy data (mini)", now - 4),
                Status("c", "toy[mini-c-s0]", SESSION, now - 1, "setting up", now - 1)]
    assert status_lines(statuses, 10, 34, now, rows=2) == [
        "pytest-mlab: 3 running, 10/34 done, 24 left",
        "  toy[mini-a-s0]: step 3/50 for 12s, 1m05s in all",
        "  toy[mini-b-s0]: preparing toy data (mini) for 4s",
        "  ... and 1 more",
    ]


class FakeWriter:
    """What _Screen needs of pytest's TerminalWriter."""

    fullwidth = 40

    def __init__(self) -> None:
        self._file = io.StringIO()


def test_the_block_is_wiped_before_pytest_writes_and_the_cursor_goes_back_to_its_column():
    writer = FakeWriter()
    terminal = writer._file
    screen = _Screen(writer, live=True)
    assert writer._file is screen
    screen.write("specs/tasks/toy.yaml \x1b[32m.\x1b[0m")  # colours take no column
    screen.show(["pytest-mlab: 1 running", "  " + "x" * 60])
    screen.show(["pytest-mlab: 1 running", "  " + "x" * 60])  # unchanged: not drawn again
    screen.write(".")
    screen.close()
    assert writer._file is terminal
    assert terminal.getvalue() == ("specs/tasks/toy.yaml \x1b[32m.\x1b[0m"
                                   "\npytest-mlab: 1 running\n  " + "x" * 37  # cut to the terminal's width
                                   + "\r\x1b[2K\x1b[1A" * 2 + "\r\x1b[22C" + ".")


def test_without_a_terminal_the_status_is_a_line_of_its_own():
    writer = FakeWriter()
    screen = _Screen(writer, live=False)
    screen.write("...")
    screen.show(["pytest-mlab: 1 running, 3/9 done, 6 left: toy[mini-a-s0]: step 2/10 for 3s"])
    screen.write(".")
    screen.close()
    assert writer._file.getvalue() == "...\npytest-mlab: 1 running, 3/9 done, 6 left: toy[mini-a-s0]: step 2/10 for 3s\n."


SLEEPER = textwrap.dedent('''
    from pytest_mlab.agents import Agent

    class Sleeper(Agent):
        def run(self, env):
            env.step("Write File", {"file_name": "nap.py", "content": "import time; time.sleep(2)"})
            env.step("Execute Script", {"script_name": "nap.py"})
            env.step("Write File", {"file_name": "submission.txt", "content": "100"})
            env.step("Final Answer", {"final_answer": "done"})
    ''')


@pytest.fixture
def sleepy_project(pytester: pytest.Pytester) -> Path:
    root = copy_toy_project(pytester.path)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (root / "slow_agents.py").write_text(SLEEPER)
    (root / "agents" / "sleeper.yaml").write_text("kind: Agent\nname: sleeper\nimplementation: slow_agents:Sleeper\n"
                                                  "actions: [Write File, Execute Script, Final Answer]\n")
    return root


@pytest.mark.slow
def test_under_xdist_the_controller_shows_the_running_items(pytester, sleepy_project):
    result = pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-n", "2",
                                           "--mlab-cache", str(sleepy_project / ".cache"), "--sandbox=local",
                                           "--agent=sleeper", "--seeds=2", "--mlab-progress=on", timeout=300)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["pytest-mlab: * running, */2 done, * left: toy[[]mini-sleeper-s?[]]: * for *"])
    assert os.listdir(sleepy_project / "mlab-results" / ".progress") == []  # each run removed its status


@pytest.mark.slow
def test_auto_shows_nothing_without_a_terminal_and_a_bad_mode_stops_the_session(pytester, sleepy_project):
    result = pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--sandbox=local",
                                           "--mlab-cache", str(sleepy_project / ".cache"), "--agent=sleeper",
                                           timeout=300)
    result.assert_outcomes(passed=1)
    assert "running," not in output_of(result)
    bad = pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--mlab-progress=loud")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--mlab-progress=loud: expected one of auto, on, off*"])

"""SIGINT and SIGKILL mid-run, then resume: real pytest sessions of the toy project, stopped while
one agent waits in the middle of its run, on every backend that can run here.

An agent gains from a lost run (a bad score that vanishes from results.json) and from a run that
is never repeated after the harness cut it short; neither may happen. Every run of the session
whose result is on disk is in results.json, and ``--mlab-resume`` runs again exactly the runs that
were interrupted or killed, keeping the finished ones byte for byte.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_mlab.trace import read_trace
from tests.helpers import UNRELATED_PLUGINS, copy_toy_project, output_of, read_results

pytestmark = pytest.mark.slow

WAITER = """
import os, time
from pathlib import Path
from pytest_mlab.agents import Agent

class Waiter(Agent):
    '''Writes the exact answer, says which process runs it, then waits while the flag file exists.'''

    def run(self, env):
        env.step("Write File", {"file_name": "submission.txt", "content": "100"})
        flag = Path(os.environ["WAIT_FLAG"])
        flag.with_suffix(".pid").write_text(str(os.getpid()))
        while flag.exists():
            time.sleep(0.1)
        env.step("Final Answer", {"final_answer": "done"})
"""
PATIENCE_S = 180  # for a stuck session to show itself as a failure, not as a hung suite
# The tests ask for ``kind`` before ``pytester``: pytester drops the modules a test imported, and the
# docker client imported again next to the old one fails ("You can only merge into CookieJar").


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The toy project plus the ``waiter`` agent, whose flag file is in place (it waits)."""
    root = copy_toy_project(pytester.path)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (root / "waiter.py").write_text(WAITER)
    (root / "agents" / "waiter.yaml").write_text(
        "kind: Agent\nname: waiter\nimplementation: waiter:Waiter\nactions: [Write File, Final Answer]\n")
    (root / "wait.flag").write_text("")
    monkeypatch.setenv("WAIT_FLAG", str(root / "wait.flag"))
    return root


def arguments(project: Path, backend: str, *extra: str) -> list[str]:
    return ["specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--mlab-cache", str(project / ".cache"),
            f"--sandbox={backend}", *extra]


def start(project: Path, backend: str, *extra: str) -> subprocess.Popen:
    """A session in its own process group, as a terminal would run it; its output goes to session.log.
    Ctrl-C works as in a terminal even when this test suite was started in the background of a
    shell without job control, which ignores SIGINT in everything it starts (and so in its children)."""
    with open(project / "session.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "pytest", *arguments(project, backend, *extra)], cwd=project,
                                start_new_session=True, stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=_default_sigint)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def trace_of(project: Path, agent: str) -> Path:
    return project / "mlab-results" / "runs" / f"toy-mini-{agent}-s0" / "trace.jsonl"


def graded(project: Path, agent: str) -> bool:
    trace = trace_of(project, agent)
    return trace.exists() and any(record.get("type") == "result" for record in read_trace(trace))


def wait_until_waiting(process: subprocess.Popen, project: Path, finished: tuple[str, ...]) -> int:
    """Until the waiter is mid-run and the ``finished`` agents' runs are graded; the waiter's pid."""
    pid_file = project / "wait.pid"
    deadline = time.monotonic() + PATIENCE_S
    while not (pid_file.exists() and pid_file.read_text() and all(graded(project, agent) for agent in finished)):
        if process.poll() is not None:
            pytest.fail(f"the session ended before it could be stopped:\n{log_of(project)}")
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail("the waiter never started, or the other runs never finished")
        time.sleep(0.1)
    return int(pid_file.read_text())


def finish(process: subprocess.Popen, project: Path) -> tuple[int, str]:
    """The session's exit status and output, once it has stopped."""
    try:
        process.wait(timeout=PATIENCE_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"the session did not stop:\n{log_of(project)}")
    return process.returncode, log_of(project)


def log_of(project: Path) -> str:
    return (project / "session.log").read_text(errors="replace")


def rows(project: Path) -> dict[str, dict]:
    return {row["agent"]: row for row in read_results(project)["runs"]}


def resume(pytester: pytest.Pytester, project: Path, backend: str, agents: str) -> dict[str, dict]:
    """The flag is gone, so a waiter run again goes straight to its final answer."""
    (project / "wait.flag").unlink()
    result = pytester.runpytest_subprocess(*arguments(project, backend, agents, "--mlab-resume"),
                                           timeout=PATIENCE_S)
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    return rows(project)


@pytest.mark.parametrize("how", ["alone", "xdist-controller", "xdist-group"])
def test_sigint_mid_run_then_resume(kind, how, pytester, project):  # noqa: F811
    """No graded run is lost, and resume runs again only the interrupted one.

    ``alone``: SIGINT to a session without xdist. ``xdist-controller``: SIGINT to the controller
    only (its workers are stopped by xdist). ``xdist-group``: Ctrl-C in a terminal, which signals
    the controller and its workers at once."""
    workers = [] if how == "alone" else ["-n", "2"]
    process = start(project, kind, "--agent=baseline,waiter", *workers)
    wait_until_waiting(process, project, finished=("baseline",))
    if how == "xdist-group":
        os.killpg(process.pid, signal.SIGINT)
    else:
        os.kill(process.pid, signal.SIGINT)
    code, output = finish(process, project)

    assert code == pytest.ExitCode.INTERRUPTED, output
    first = rows(project)
    assert sorted(first) == ["baseline", "waiter"], output
    assert first["baseline"]["end_reason"] == "final answer" and first["baseline"]["passed"]
    interrupted = first["waiter"]
    assert interrupted["end_reason"] == "interrupted" and not interrupted["passed"] and not interrupted["resumed"]
    assert interrupted["infrastructure"] and interrupted["steps"] == 1  # Ctrl-C is not the agent's failure
    assert interrupted["valid"] and interrupted["score"] == 0.0  # its final workspace was graded
    assert not first["baseline"]["infrastructure"]
    assert interrupted["sandbox"] == kind and interrupted["trace"] == str(trace_of(project, "waiter"))
    records = read_trace(trace_of(project, "waiter"))
    assert records[0]["session"] == records[-1]["session"] and records[-1]["type"] == "result"
    finished = trace_of(project, "baseline").read_bytes()

    again = resume(pytester, project, kind, "--agent=baseline,waiter")

    assert again["baseline"]["resumed"] and again["baseline"]["passed"]
    assert trace_of(project, "baseline").read_bytes() == finished  # not run again
    assert not again["waiter"]["resumed"] and again["waiter"]["end_reason"] == "final answer"
    assert again["waiter"]["passed"] and again["waiter"]["run_id"] == interrupted["run_id"]


def test_sigkill_of_a_worker_mid_run_then_resume(kind, pytester, project):  # noqa: F811
    """The worker's other runs and the other worker's stay; the killed run is a crashed row of the
    harness, and resume runs again only that one."""
    process = start(project, kind, "--agent=baseline,reference,waiter", "-n", "2")
    worker = wait_until_waiting(process, project, finished=("baseline", "reference"))
    assert worker != process.pid, "the agent runs in an xdist worker, not in the controller"
    os.kill(worker, signal.SIGKILL)
    code, output = finish(process, project)

    assert code == pytest.ExitCode.TESTS_FAILED, output
    first = rows(project)
    assert sorted(first) == ["baseline", "reference", "waiter"], output
    assert first["baseline"]["passed"] and first["reference"]["passed"]
    killed = first["waiter"]
    assert killed["end_reason"] == "crashed" and killed["infrastructure"] and not killed["passed"]
    assert killed["steps"] == 1  # counted from its trace
    assert "crashed while running" in killed["message"]
    assert not any(record.get("type") == "result" for record in read_trace(trace_of(project, "waiter")))
    finished = {agent: trace_of(project, agent).read_bytes() for agent in ("baseline", "reference")}

    again = resume(pytester, project, kind, "--agent=baseline,reference,waiter")

    for agent in ("baseline", "reference"):
        assert again[agent]["resumed"] and again[agent]["passed"]
        assert trace_of(project, agent).read_bytes() == finished[agent]
    assert not again["waiter"]["resumed"] and again["waiter"]["end_reason"] == "final answer"
    assert again["waiter"]["passed"] and not again["waiter"]["infrastructure"]


SLOW_GRADING_S = 12  # past xdist's own window for a worker (it kills one 10 s after asking it to exit)
# Grading runs outside the sandbox and Ctrl-C reaches runs the same way on every backend (the tests
# above run each backend): the slow-grading tests below use the local one only, to keep CI short.
BACKEND = "local"


def slow_grader(project: Path, seconds: float) -> None:
    """The toy task's grader takes ``seconds`` more."""
    grader = project / "task_assets" / "toy" / "grader.py"
    grader.write_text(grader.read_text().replace(
        "def score(workspace: Path, answers: Path) -> float:\n",
        f"def score(workspace: Path, answers: Path) -> float:\n    __import__('time').sleep({seconds})\n"))


def ctrl_c(process: subprocess.Popen, how: str) -> None:
    """``xdist-group``: the terminal's Ctrl-C, to every process of the session; else to pytest alone."""
    if how == "xdist-group":
        os.killpg(process.pid, signal.SIGINT)
    else:
        os.kill(process.pid, signal.SIGINT)


@pytest.mark.parametrize("how", ["alone", "xdist-controller", "xdist-group"])
def test_sigint_grades_the_run_in_progress_even_when_grading_outlasts_xdists_window(how, pytester, project):
    """The interrupted run is graded, alone and under xdist, though grading takes longer than xdist
    waits for a worker on its own; the row is an infrastructure failure with its trace's steps."""
    slow_grader(project, SLOW_GRADING_S if how != "alone" else 3)  # alone, no xdist window to outlast
    workers = [] if how == "alone" else ["-n", "2"]
    process = start(project, BACKEND, "--agent=waiter", *workers)
    wait_until_waiting(process, project, finished=())
    ctrl_c(process, how)
    code, output = finish(process, project)

    assert code == pytest.ExitCode.INTERRUPTED, output
    row = rows(project)["waiter"]
    assert row["end_reason"] == row["failure"] == "interrupted" and row["infrastructure"] and not row["passed"]
    assert row["steps"] == 1 and row["valid"] and row["score"] == 0.0, output
    assert read_trace(trace_of(project, "waiter"))[-1]["type"] == "result"
    if how != "alone":  # the controller said why it waits
        assert "1 run(s) grade their final workspace" in output and "Ctrl-C again to stop at once" in output


@pytest.mark.parametrize("how", ["alone", "xdist-controller", "xdist-group"])
def test_a_second_sigint_stops_grading_at_once(how, pytester, project):
    """Grading would take 60 s; a second Ctrl-C, 2 s after the first, stops the session well before
    that, and leaves an interrupted row without a score (run again by --mlab-resume)."""
    slow_grader(project, 60)
    workers = [] if how == "alone" else ["-n", "2"]
    process = start(project, BACKEND, "--agent=waiter", *workers)
    wait_until_waiting(process, project, finished=())
    ctrl_c(process, how)
    deadline = time.monotonic() + PATIENCE_S
    while not any(record.get("type") == "ended" for record in read_trace(trace_of(project, "waiter"))):
        assert time.monotonic() < deadline and process.poll() is None, log_of(project)
        time.sleep(0.1)
    time.sleep(2)  # past the window in which a SIGINT counts as the same Ctrl-C
    stopped = time.monotonic()
    ctrl_c(process, how)
    code, output = finish(process, project)

    assert time.monotonic() - stopped < 30, output  # not the grader's 60 s (nor xdist's wait for it)
    assert code == pytest.ExitCode.INTERRUPTED, output
    row = rows(project)["waiter"]
    assert row["end_reason"] == "interrupted" and row["infrastructure"] and row["score"] is None
    assert row["steps"] == 1 and "before this run was graded" in row["message"]

"""The machine lock of timed measurements (pytest_mlab/sandbox/quiet.py): scripts share it, a timed
measurement holds it alone, waiting scripts do not starve it, and the measure step uses it."""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from pytest_mlab.errors import UsageError
from pytest_mlab.grading.measured import executions
from pytest_mlab.sandbox import quiet
from tests.grading.support import tiny_task

HOLDER = textwrap.dedent('''
    import pathlib, sys, time
    from pytest_mlab.sandbox import quiet
    mode, flag, log = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
    with (quiet.timed_measurement() if mode == "timed" else quiet.script_running()):
        with log.open("a") as handle:
            handle.write(f"{flag.name} in\\n")
        while not flag.exists():
            time.sleep(0.02)
        with log.open("a") as handle:
            handle.write(f"{flag.name} out\\n")
''')


@pytest.fixture
def lock_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "locks"
    monkeypatch.setenv(quiet.FOLDER_VARIABLE, str(folder))
    return folder


class Holder:
    """A process that takes the lock in ``mode`` and keeps it until released."""

    def __init__(self, mode: str, name: str, folder: Path, log: Path) -> None:
        self.release_flag, self.log, self.name = folder / name, log, name
        self.process = subprocess.Popen([sys.executable, "-c", HOLDER, mode, str(self.release_flag), str(log)],
                                        env={**os.environ, quiet.FOLDER_VARIABLE: str(folder / "locks")})

    def release(self) -> None:
        self.release_flag.write_text("")

    def wait(self) -> None:
        assert self.process.wait(timeout=60) == 0


def wait_for(log: Path, line: str) -> None:
    deadline = time.monotonic() + 60
    while line not in _lines(log):
        assert time.monotonic() < deadline, f"{line!r} never came; log: {_lines(log)}"
        time.sleep(0.02)


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_a_timed_measurement_waits_for_running_scripts_and_new_scripts_wait_for_it(tmp_path, lock_dir):
    log = tmp_path / "log"
    first = Holder("script", "first", tmp_path, log)
    wait_for(log, "first in")
    timed = Holder("timed", "timed", tmp_path, log)
    time.sleep(0.5)  # time for the timed measurement to line up behind the running script
    late = Holder("script", "late", tmp_path, log)
    time.sleep(0.5)
    assert _lines(log) == ["first in"], "neither may start while the first script runs"
    first.release()
    wait_for(log, "timed in")
    time.sleep(0.5)
    assert "late in" not in _lines(log), "a script started after the timed measurement waits for it"
    timed.release()
    wait_for(log, "late in")
    late.release()
    for holder in (first, timed, late):
        holder.wait()
    assert _lines(log) == ["first in", "first out", "timed in", "timed out", "late in", "late out"]


def test_scripts_share_the_machine(tmp_path, lock_dir):
    log = tmp_path / "log"
    one, two = Holder("script", "one", tmp_path, log), Holder("script", "two", tmp_path, log)
    wait_for(log, "one in")
    wait_for(log, "two in")  # both at once
    for holder in (one, two):
        holder.release()
        holder.wait()


def test_a_killed_holder_frees_the_machine(tmp_path, lock_dir):
    log = tmp_path / "log"
    timed = Holder("timed", "timed", tmp_path, log)
    wait_for(log, "timed in")
    timed.process.kill()
    timed.process.wait(timeout=60)
    with quiet.script_running():  # would wait forever if the lock outlived its holder
        pass


def test_the_timed_measurements_own_scripts_do_not_wait_for_it(lock_dir):
    with quiet.timed_measurement():
        assert quiet.holds_exclusive()
        with quiet.script_running(), quiet.timed_measurement():
            assert quiet.holds_exclusive()
        assert quiet.holds_exclusive()
    assert not quiet.holds_exclusive()
    with quiet.script_running():
        assert not quiet.holds_exclusive()


PROBE = textwrap.dedent('''
    import fcntl, json, os, sys
    import mlab_measure
    inputs, out = mlab_measure.folders()
    probes = {}
    for name, operation in (("shared", fcntl.LOCK_SH), ("exclusive", fcntl.LOCK_EX)):
        with open(MACHINE_LOCK_PATH, "ab") as handle:
            try:
                fcntl.flock(handle, operation | fcntl.LOCK_NB)
                probes[name] = "free"
            except BlockingIOError:
                probes[name] = "held"
    json.dump(probes, open(os.path.join(out, "probes.json"), "w"))
    mlab_measure.finish(out)
''')


@pytest.mark.parametrize("repeats, expected", [
    (None, {"shared": "free", "exclusive": "held"}),   # an untimed measure step shares the machine
    (2, {"shared": "held", "exclusive": "held"}),      # a timed one holds it alone, in every execution
])
def test_the_measure_step_holds_the_machine_only_when_timed(tmp_path, lock_dir, repeats, expected):
    probe = PROBE.replace("MACHINE_LOCK_PATH", repr(str(lock_dir / "machine.lock")))
    task = tiny_task(tmp_path, probe, starter={"work.py": ""}, repeats=repeats)
    measured = task.measure("local", {"work.py": ""})
    runs = list(executions(measured, "submission"))
    if repeats:
        runs += list(executions(measured, "starter")) + list(executions(measured, "overhead"))
    assert len(runs) == (3 * repeats if repeats else 1)
    for run in runs:
        assert json.loads((run.out / "probes.json").read_text()) == expected
    with open(lock_dir / "machine.lock", "ab") as handle:  # released afterwards
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_execute_script_shares_the_machine(tmp_path, lock_dir):
    """The agent's scripts wait while a timed measurement holds the machine."""
    from pytest_mlab.actions import execute

    seen = []

    class Sandbox:
        python = "python"

        def exists(self, path):
            return True

        def exec(self, argv, **kwargs):
            with open(lock_dir / "machine.lock", "ab") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    seen.append("free")
                except BlockingIOError:
                    seen.append("held")
            raise RuntimeError("stop here")

    class Limits:
        execute_timeout, output_limit = 10.0, 1000

    class Context:
        sandbox, limits, remaining_time = Sandbox(), Limits(), 10.0

    with pytest.raises(RuntimeError, match="stop here"):
        execute.execute_script(Context(), "train.py")
    assert seen == ["held"]


def test_a_session_keeps_its_lock_in_its_results_folder(pytester, tmp_path, monkeypatch):
    """The xdist workers of one session agree on the lock; another session's results folder is
    another lock, so concurrent sessions (e.g. a test suite and a sub-session) never wait on each other."""
    monkeypatch.delenv(quiet.FOLDER_VARIABLE, raising=False)
    monkeypatch.setattr(quiet, "_session_folder", None)
    assert quiet.lock_folder().parent == Path(tempfile.gettempdir())
    pytester.parseconfigure("--mlab-out", str(tmp_path / "results"))
    assert quiet.lock_folder() == tmp_path / "results" / ".quiet" / socket.gethostname()
    monkeypatch.setenv(quiet.FOLDER_VARIABLE, str(tmp_path / "chosen"))
    assert quiet.lock_folder() == tmp_path / "chosen"


def test_a_session_run_inside_another_process_gives_the_lock_folder_back(pytester, monkeypatch):
    """pytester's in-process runs: once the inner session ends, the process's own session locks
    where it did before, not in the inner session's (deleted) results folder."""
    monkeypatch.delenv(quiet.FOLDER_VARIABLE, raising=False)
    before = quiet.lock_folder()
    pytester.makepyfile(test_inner="def test_inner():\n    pass\n")
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert quiet.lock_folder() == before


def test_an_unusable_lock_folder_is_a_usage_error_naming_the_variable(pytester, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(quiet.FOLDER_VARIABLE, str(blocker / "locks"))
    with pytest.raises(UsageError, match=f"{quiet.FOLDER_VARIABLE}={blocker / 'locks'}: cannot keep the lock"):
        quiet.lock_folder()
    result = pytester.runpytest("--collect-only", "--mlab-out", str(tmp_path / "results"), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{quiet.FOLDER_VARIABLE}=*locks: cannot keep the lock of timed measurements "
                                 f"there*set {quiet.FOLDER_VARIABLE} to a folder you can write*"])

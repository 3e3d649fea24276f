"""The bwrap backend: what code run by Execute Script can and cannot reach, its limits, and how
``--sandbox=auto`` and ``--sandbox=bwrap`` choose it."""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from pathlib import Path

import pytest

from pytest_mlab.actions.registry import implementations
from pytest_mlab.env import Environment, ReadOnlyRules
from pytest_mlab.sandbox import SandboxOptions, open_sandbox
from pytest_mlab.sandbox import bwrap, host_runtime
from pytest_mlab.sandbox.registry import (fallback_notice, isolation_record, isolation_warning, resolve_kind,
                                          sandbox_unavailable)
from pytest_mlab.spec.models import Limits
from pytest_mlab.trace import SnapshotStore, TraceWriter
from tests.env.support import repo_project
from tests.helpers import output_of, read_results, run_specs

REASON = sandbox_unavailable("bwrap")
needs_bwrap = pytest.mark.skipif(REASON is not None, reason=f"bwrap cannot run here: {REASON}")
ANSWERS = "id,answer\n1,42\n"
DATA = "id,value\n1,10\n"


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    """A data cache laid out as pytest_mlab.data lays it out: public files and hidden answers."""
    entry = tmp_path / "cache" / "task" / "mini"
    (entry / "public").mkdir(parents=True)
    (entry / "hidden").mkdir()
    (entry / "public" / "data.csv").write_text(DATA)
    (entry / "hidden" / "answers.csv").write_text(ANSWERS)
    return entry


@pytest.fixture
def env(tmp_path: Path, cache: Path):
    if REASON is not None:
        pytest.skip(f"bwrap cannot run here: {REASON}")
    sandbox = open_sandbox("bwrap", options=SandboxOptions(label="bwrap-test"))
    sandbox.copy_in(cache / "public" / "data.csv", "data.csv", link=True)
    project = repo_project()
    specs = (project.action("Write File"), project.action("Execute Script"))
    environment = Environment(sandbox=sandbox, actions=specs, implementations=implementations(specs),
                              limits=Limits(max_steps=100, execute_timeout=30),
                              read_only=ReadOnlyRules(frozenset({"data.csv"})), trace=TraceWriter(tmp_path / "t.jsonl"),
                              snapshots=SnapshotStore(tmp_path / "snapshots"), research_problem="probe")
    yield environment
    sandbox.close()
    environment.trace.close()


def execute(env: Environment, source: str) -> str:
    env.step("Write File", {"file_name": "probe.py", "content": source})
    return env.step("Execute Script", {"script_name": "probe.py"})


def attempt(expression: str) -> str:
    """A script line printing OK or the error an expression raised."""
    return f"try:\n    {expression}\n    print('OK')\nexcept Exception as exc:\n    print('DENIED', type(exc).__name__)\n"


def test_runs_as_bwrap_with_the_workspace_as_cwd(env):
    observation = execute(env, "import os\nprint(os.getcwd())\nprint(open('data.csv').read())")
    assert env.sandbox.name == "bwrap"
    assert observation == f"The script has been executed. Here is the output:\n{env.sandbox.workspace}\n{DATA}\n"


def test_hidden_answers_are_invisible_by_absolute_path(env, cache):
    answers = cache / "hidden" / "answers.csv"
    observation = execute(env, attempt(f"print(open({str(answers)!r}).read())") +
                          f"import os\nprint(os.path.exists({str(cache)!r}))\n")
    assert "DENIED FileNotFoundError" in observation and "False" in observation
    assert "42" not in observation


def test_the_users_home_shows_nothing_of_the_user(env, tmp_path):
    home = Path.home()
    (tmp_path / "marker").write_text("x")
    observation = execute(env, f"import os\nprint(sorted(os.listdir(os.path.expanduser('~'))))\n"
                               f"print(os.path.expanduser('~'))\n"
                               f"print(sorted(os.listdir({str(home)!r})) if os.path.isdir({str(home)!r}) else 'absent')\n"
                               f"print(os.path.exists({str(tmp_path / 'marker')!r}))\n")
    lines = observation.splitlines()[1:]
    assert lines[0] == "[]" and lines[1] == bwrap.HOME
    # only the path down to a bound Python installation may show in the real home, nothing else
    visible = [] if lines[2] == "absent" else json.loads(lines[2].replace("'", '"'))
    for name in visible:
        assert any(path.startswith(str(home / name)) for path in host_runtime.python_dirs()), name
    assert lines[3] == "False"


def test_other_runs_workspaces_and_results_are_invisible(env, tmp_path):
    results = tmp_path / "mlab-results" / "runs"
    results.mkdir(parents=True)
    with open_sandbox("local") as other, open_sandbox("bwrap") as third:
        other.write("secret.py", b"x")
        third.write("secret.py", b"x")
        paths = [other.workspace / "secret.py", third.workspace / "secret.py", results]
        observation = execute(env, "import os\n" + "".join(f"print(os.path.exists({str(p)!r}))\n" for p in paths))
    assert observation.splitlines()[1:] == ["False", "False", "False"]


def test_no_network(env):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        observation = execute(env, attempt(f"__import__('socket').create_connection(('127.0.0.1', {port}), timeout=5)"))
    finally:
        server.close()
    assert "DENIED ConnectionRefusedError" in observation


def test_api_keys_are_absent(env, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-should-not-leak")
    observation = execute(env, "import os\nprint(sorted(os.environ))\nprint(os.environ.get('OPENAI_API_KEY'))\n"
                               "print(open('/proc/1/environ', 'rb').read().count(b'sk-fake'))\n")
    assert "sk-fake" not in observation and "OPENAI_API_KEY" not in observation
    assert observation.rstrip().endswith("None\n0")


def test_a_background_process_is_gone_after_the_run(env):
    tag = f"mlab-bg-{uuid.uuid4().hex}"
    source = ("import subprocess, sys\n"
              f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)', {tag!r}], start_new_session=True)\n"
              "print('spawned')\n")
    assert "spawned" in execute(env, source)
    time.sleep(0.5)
    survivors = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if tag.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                survivors.append(pid)
        except OSError:
            continue
    assert survivors == []


def test_writing_outside_the_workspace_fails(env, tmp_path):
    (tmp_path / "outside.txt").write_text("secret")
    observation = execute(env, attempt(f"open({str(tmp_path / 'outside.txt')!r}, 'w').write('pwned')") +
                          attempt("open('/usr/planted.py', 'w').write('x')") +
                          attempt(f"open({str(env.sandbox.workspace.parent / 'planted.py')!r}, 'w').write('x')"))
    assert observation.count("DENIED") == 2 and "OK" in observation  # /tmp is a private tmpfs
    assert (tmp_path / "outside.txt").read_text() == "secret"
    assert not Path("/usr/planted.py").exists() and not (env.sandbox.workspace.parent / "planted.py").exists()


def test_linked_data_cannot_be_changed_and_the_cache_stays_intact(env, cache):
    observation = execute(env, attempt("open('data.csv', 'a').write('2,20\\n')") + attempt("__import__('os').remove('data.csv')")
                          + attempt("__import__('os').rename('data.csv', 'moved.csv')")
                          + attempt("__import__('os').truncate('data.csv', 0)"))
    assert observation.count("DENIED") == 4, observation
    assert (cache / "public" / "data.csv").read_text() == DATA
    # the agent's own files stay writable, and a harness write replaces the link instead of writing through it
    assert "OK" in execute(env, attempt("open('mine.txt', 'w').write('x')"))
    env.sandbox.write("data.csv", b"replaced")
    assert (cache / "public" / "data.csv").read_text() == DATA


def limited(tmp_path: Path, **options) -> object:
    if REASON is not None:
        pytest.skip(f"bwrap cannot run here: {REASON}")
    sandbox = open_sandbox("bwrap", options=SandboxOptions(label="limits", **options))
    for limit in options:
        if not sandbox.limits.enforced.get(limit, "").startswith("cgroup"):
            sandbox.close()
            pytest.skip(f"{limit} limit is not enforced by a cgroup here: {sandbox.limits.enforced}")
    return sandbox


def test_memory_limit_kills_a_memory_hog(tmp_path):
    sandbox = limited(tmp_path, memory=256 * 2**20)
    with sandbox:
        sandbox.write("hog.py", b"block = bytearray(1024 * 2**20)\nblock[::4096] = b'1' * len(block[::4096])\nprint('survived')\n")
        result = sandbox.exec([sandbox.python, "hog.py"], timeout=60, output_limit=10_000)
    assert result.returncode == -9 and "survived" not in result.stdout
    assert "[killed: the sandbox's memory limit (256 MiB) was reached]" in result.stderr


def test_pids_limit_contains_a_fork_bomb(tmp_path):
    sandbox = limited(tmp_path, pids=40)
    with sandbox:
        sandbox.write("bomb.py", b"import subprocess\nprocs = []\nfor i in range(200):\n    try:\n"
                                 b"        procs.append(subprocess.Popen(['sleep', '10']))\n"
                                 b"    except OSError as exc:\n        print('stopped at', i, exc.errno)\n        break\n")
        result = sandbox.exec([sandbox.python, "bomb.py"], timeout=60, output_limit=10_000)
        assert "stopped at" in result.stdout and int(result.stdout.split()[2]) < 40
    assert sandbox.limits.groups == []


# --- choosing the backend --------------------------------------------------------------------------


@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    """This process sees no bwrap on PATH (and re-probes)."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    bwrap.unavailable_reason.cache_clear()
    yield str(empty)
    bwrap.unavailable_reason.cache_clear()


def test_auto_falls_back_to_local_without_bwrap(no_bwrap):
    reason = sandbox_unavailable("bwrap")
    assert reason is not None and "apt-get install bubblewrap" in reason
    assert resolve_kind("auto") == "local"
    with open_sandbox("auto") as sandbox:
        assert sandbox.name == "local"
    warning = isolation_warning("auto", ["local"])
    assert warning.startswith("WARNING: code run by agents was NOT isolated") and "bubblewrap" in warning


@needs_bwrap
def test_auto_picks_bwrap_when_it_works():
    assert resolve_kind("auto") == "bwrap"
    with open_sandbox("auto") as sandbox:
        assert sandbox.name == "bwrap"
    assert isolation_warning("auto", ["bwrap"]) is None
    assert "not isolated" in isolation_warning("local", ["local"])


@pytest.mark.slow
@needs_bwrap
def test_default_run_is_isolated_and_says_nothing(pytester, toy_project, mlab_cache):
    result = run_specs(pytester, "--agent=reference", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(passed=1)
    results = read_results(toy_project)
    assert [run["sandbox"] for run in results["runs"]] == ["bwrap"]
    assert (results["settings"]["sandbox_resolved"], results["settings"]["isolation"]) == ("bwrap", "isolated (bwrap)")
    assert "not isolated" not in output_of(result).lower()


@pytest.mark.slow
def test_without_bwrap_auto_runs_locally_saying_so_first_last_and_in_the_results(pytester, toy_project, mlab_cache,
                                                                                no_bwrap):
    result = run_specs(pytester, "--agent=reference", "-q", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(passed=1)
    results = read_results(toy_project)
    assert [run["sandbox"] for run in results["runs"]] == ["local"]
    text = output_of(result)
    assert text.count("code run by agents was NOT isolated") == 1  # the summary's last word
    notice = "WARNING: --sandbox=auto found no isolating sandbox, so code run by agents will NOT be isolated"
    assert text.count(notice) == 1 and "bubblewrap is not installed" in text
    assert text.index(notice) < text.index("pytest-mlab results")  # before any run, even with -q
    assert results["settings"]["sandbox"] == "auto" and results["settings"]["sandbox_resolved"] == "local"
    assert results["settings"]["isolation"].startswith("NOT isolated: --sandbox=auto fell back to the local sandbox "
                                                       "(bwrap: bubblewrap is not installed")


@pytest.mark.slow
def test_sandbox_bwrap_without_bwrap_is_a_usage_error(pytester, toy_project, mlab_cache, no_bwrap):
    result = run_specs(pytester, "--agent=reference", "--sandbox=bwrap", cache_dir=mlab_cache, subprocess=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = output_of(result)
    assert "--sandbox=bwrap: the bwrap sandbox cannot run here: bubblewrap is not installed" in text
    assert "apt-get install bubblewrap" in text and "Traceback" not in text
    assert not (toy_project / "mlab-results" / "results.json").exists()


# --- the probe and what auto says -----------------------------------------------------------------


def test_the_python_installation_is_bound_after_the_private_tmp(monkeypatch, tmp_path):
    """Mounts apply in order: a runtime bound before the tmpfs /tmp would be hidden by it."""
    runtime = str(tmp_path / "venv")
    monkeypatch.setattr(bwrap, "python_dirs", lambda python=None: (runtime,))
    args = bwrap.bwrap_command(tmp_path / "ws", network=False)
    tmpfs = args.index("--tmpfs")
    assert args[tmpfs + 1] == "/tmp"
    assert args.index(runtime) > tmpfs and args.index(str(tmp_path / "ws")) > tmpfs


@needs_bwrap
def test_a_hidden_interpreter_fails_the_probe_with_its_real_cause(monkeypatch):
    monkeypatch.setattr(bwrap, "python_dirs", lambda python=None: ())  # as if the installation were not bound
    bwrap.unavailable_reason.cache_clear()
    try:
        reason = bwrap.unavailable_reason()
    finally:
        bwrap.unavailable_reason.cache_clear()
    assert reason is not None and "bwrap: execvp" in reason, reason
    assert "is not found inside the sandbox" in reason and "namespaces" not in reason


def test_probe_failures_blame_user_namespaces_only_when_bwrap_does():
    namespaces = bwrap.probe_failure(1, "bwrap: No permissions to creating new namespace, likely because the kernel "
                                        "does not allow non-privileged user namespaces.\n")
    assert "No permissions to creating new namespace" in namespaces and "user namespaces seem to be disabled" in namespaces
    apparmor = bwrap.probe_failure(1, "bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted\n")
    assert "RTM_NEWADDR" in apparmor and "user namespaces" in apparmor
    python = bwrap.probe_failure(1, "Fatal Python error: init_fs_encoding: failed to get the Python codec\n"
                                    "ModuleNotFoundError: No module named 'encodings'\n")
    assert "No module named 'encodings'" in python and "Python started inside the sandbox but failed" in python
    assert "namespace" not in python
    other = bwrap.probe_failure(1, "bwrap: Can't mount proc on /newroot/proc: Operation not permitted\n")
    assert "Can't mount proc" in other and "namespaces" not in other


def test_an_auto_fallback_is_announced_and_recorded(no_bwrap):
    notice = fallback_notice("auto")
    assert notice.startswith("WARNING: --sandbox=auto found no isolating sandbox, so code run by agents will NOT "
                             "be isolated") and "bubblewrap is not installed" in notice and "--sandbox=local" in notice
    record = isolation_record("auto")
    assert record["sandbox_resolved"] == "local" and record["isolation"].startswith("NOT isolated")
    assert fallback_notice("local").startswith("WARNING: --sandbox=local: code run by agents is NOT isolated")
    assert isolation_record("local") == {"sandbox_resolved": "local", "isolation": "not isolated: --sandbox=local was chosen"}


@needs_bwrap
def test_auto_with_bwrap_says_nothing_and_records_isolation():
    assert fallback_notice("auto") is None
    assert isolation_record("auto") == {"sandbox_resolved": "bwrap", "isolation": "isolated (bwrap)"}


@needs_bwrap
def test_a_run_that_fell_back_alone_is_recorded_as_not_isolated():
    """A worker whose own probe failed ran its items locally: the session was not isolated."""
    record = isolation_record("auto", ["bwrap", "local", "bwrap"])
    assert record == {"sandbox_resolved": "bwrap",
                      "isolation": "NOT isolated: 1 run(s) fell back to the local sandbox on a worker where bwrap failed"}

"""The local backend: confined file operations, filtered environment, capped output and no
process left behind."""

from __future__ import annotations

import gc
import json
import os
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any, Iterator

import pytest

from pytest_mlab.errors import EnvError, SandboxError, UsageError
from pytest_mlab.sandbox import (
    SANDBOX_KINDS,
    Entry,
    ExecResult,
    LocalSandbox,
    Sandbox,
    open_sandbox,
)
from pytest_mlab.sandbox.capture import omission_marker
from pytest_mlab.sandbox.threads import THREAD_VARIABLES
from pytest_mlab.task_runtime.choice import task_python
from tests.sandbox.processes import LINUX, alive

needs_proc = pytest.mark.skipif(not LINUX, reason="process tracking through /proc is Linux-only")


@pytest.fixture()
def sb() -> Iterator[LocalSandbox]:
    sandbox = LocalSandbox()
    try:
        yield sandbox
    finally:
        sandbox.close()


def run(
    sandbox: Sandbox, code: str, *, timeout: float = 20, limit: int = 100_000, **kwargs: Any
) -> ExecResult:
    """Run a Python snippet in the sandbox with the interpreter running the tests."""
    return sandbox.exec(
        [sys.executable, "-c", textwrap.dedent(code)], timeout=timeout, output_limit=limit, **kwargs
    )


# ---------------------------------------------------------------------------------------------
# Construction, lifetime, registry


def test_is_a_sandbox_named_local(sb: LocalSandbox) -> None:
    assert isinstance(sb, Sandbox)
    assert sb.name == "local"
    # Execute Script gets the agents' own interpreter (the task runtime), not the harness's
    assert sb.python == task_python() != sys.executable
    assert sb.workspace.is_dir()
    assert sb.workspace == sb.workspace.resolve()
    assert sb.workspace.name.startswith("mlab-ws-")


def test_private_home_is_outside_the_workspace(sb: LocalSandbox) -> None:
    assert sb.home.is_dir()
    assert not sb.home.is_relative_to(sb.workspace)


def test_close_removes_owned_workspace_and_home_and_is_idempotent() -> None:
    sandbox = LocalSandbox()
    sandbox.write("deep/dir/file.txt", b"x")
    (sandbox.workspace / "deep" / "dir").chmod(0o000)  # the agent may leave unreadable dirs
    workspace, home = sandbox.workspace, sandbox.home
    sandbox.close()
    sandbox.close()
    assert not workspace.exists()
    assert not home.exists()


def test_close_keeps_a_workspace_it_did_not_create(tmp_path: Path) -> None:
    given = tmp_path / "given" / "ws"
    with LocalSandbox(given) as sandbox:
        assert sandbox.workspace == given.resolve()
        sandbox.write("kept.txt", b"kept")
        home = sandbox.home
    assert (given / "kept.txt").read_bytes() == b"kept"
    assert not home.exists()


def test_forgotten_sandbox_is_cleaned_up_when_collected() -> None:
    sandbox = LocalSandbox()
    workspace, home = sandbox.workspace, sandbox.home
    del sandbox
    gc.collect()
    assert not workspace.exists()
    assert not home.exists()


def test_workspace_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(SandboxError, match="not a directory"):
        LocalSandbox(tmp_path / "file")


def test_operations_after_close_raise_sandbox_error() -> None:
    sandbox = LocalSandbox()
    sandbox.close()
    with pytest.raises(SandboxError, match="closed"):
        sandbox.read("x")
    with pytest.raises(SandboxError, match="closed"):
        run(sandbox, "pass")


def test_registry_opens_local_and_names_known_kinds(tmp_path: Path) -> None:
    assert "local" in SANDBOX_KINDS
    with open_sandbox("local", workspace=tmp_path) as sandbox:
        assert isinstance(sandbox, LocalSandbox)
        assert sandbox.workspace == tmp_path.resolve()
    with pytest.raises(UsageError) as info:
        open_sandbox("x")
    assert str(info.value) == f"--sandbox=NAME: unknown sandbox 'x'; choose one of: {', '.join(SANDBOX_KINDS)}"


# ---------------------------------------------------------------------------------------------
# Files


def test_write_read_append_and_parent_creation(sb: LocalSandbox) -> None:
    sb.write("a/b/c.txt", b"hello")
    sb.write("./a//b/c.txt", b" world", append=True)
    assert sb.read("a/b/c.txt") == b"hello world"
    assert (sb.workspace / "a" / "b" / "c.txt").read_bytes() == b"hello world"
    sb.write("a/b/c.txt", b"new")
    assert sb.read("a/b/c.txt") == b"new"


def test_agent_errors_name_the_path(sb: LocalSandbox) -> None:
    sb.write("dir/file.txt", b"x")
    with pytest.raises(EnvError, match=r"'missing\.txt'.*no such file"):
        sb.read("missing.txt")
    with pytest.raises(EnvError, match=r"'dir'.*directory"):
        sb.read("dir")
    with pytest.raises(EnvError, match=r"'dir'.*directory"):
        sb.write("dir", b"x")
    with pytest.raises(EnvError, match=r"'\.'.*directory"):
        sb.write(".", b"x")
    with pytest.raises(EnvError, match=r"'dir/file\.txt/inner'.*not a directory"):
        sb.write("dir/file.txt/inner", b"x")
    with pytest.raises(EnvError, match=r"'nope'.*no such directory"):
        sb.list("nope")
    with pytest.raises(EnvError, match=r"'dir/file\.txt'.*not a directory"):
        sb.list("dir/file.txt")


def test_list_is_sorted_with_kinds_and_sizes(sb: LocalSandbox) -> None:
    sb.write("zeta.txt", b"12345")
    sb.write("alpha.csv", b"1")
    sb.write("mid/inner.txt", b"")
    assert sb.list(".") == [
        Entry("alpha.csv", False, 1),
        Entry("mid", True, 0),
        Entry("zeta.txt", False, 5),
    ]
    assert sb.list("mid") == [Entry("inner.txt", False, 0)]


def test_list_does_not_probe_links_leading_out(sb: LocalSandbox) -> None:
    (sb.workspace / "etc").symlink_to("/etc")
    sb.write("real.txt", b"abc")
    (sb.workspace / "inside").symlink_to("real.txt")
    assert sb.list(".") == [
        Entry("etc", False, 0),
        Entry("inside", False, 3),
        Entry("real.txt", False, 3),
    ]


def test_exists(sb: LocalSandbox) -> None:
    sb.write("x.txt", b"")
    assert sb.exists("x.txt")
    assert sb.exists("./x.txt")
    assert sb.exists(".")
    assert not sb.exists("y.txt")
    with pytest.raises(EnvError):
        sb.exists("../x.txt")


def test_copy_inside_workspace(sb: LocalSandbox) -> None:
    sb.write("train.py", b"print(1)")
    sb.copy("train.py", "backup/train_v1.py")
    assert sb.read("backup/train_v1.py") == b"print(1)"
    sb.copy("./train.py", "backup")  # into an existing directory, keeping the name
    assert sb.read("backup/train.py") == b"print(1)"
    with pytest.raises(EnvError, match=r"'missing\.py'"):
        sb.copy("missing.py", "x.py")
    with pytest.raises(EnvError, match=r"'backup'.*directory"):
        sb.copy("backup", "other")
    with pytest.raises(EnvError, match="same file"):
        sb.copy("train.py", "./train.py")


@pytest.mark.parametrize(
    "call",
    [
        lambda s, host: s.read("../outside.txt"),
        lambda s, host: s.read("/etc/passwd"),
        lambda s, host: s.write("../outside.txt", b"x"),
        lambda s, host: s.write("/tmp/mlab-should-not-exist.txt", b"x"),
        lambda s, host: s.write("~/x", b"x"),
        lambda s, host: s.list(".."),
        lambda s, host: s.exists("../outside.txt"),
        lambda s, host: s.copy("../outside.txt", "in.txt"),
        lambda s, host: s.copy("in.txt", "../copied.txt"),
        lambda s, host: s.copy_in(host, "../copied.txt"),
        lambda s, host: s.copy_out("../outside.txt", host.parent / "out.txt"),
        lambda s, host: s.read("bad\x00name"),
    ],
)
def test_every_operation_rejects_escapes(tmp_path: Path, call) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "ws"
    host = tmp_path / "outside.txt"
    host.write_bytes(b"outside")
    with LocalSandbox(root) as sandbox:
        sandbox.write("in.txt", b"in")
        with pytest.raises(EnvError):
            call(sandbox, host)
    assert host.read_bytes() == b"outside"
    assert not (tmp_path / "copied.txt").exists()
    assert not (tmp_path / "out.txt").exists()
    assert not Path("/tmp/mlab-should-not-exist.txt").exists()


def test_symlinks_cannot_reach_out(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "ws-evil"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret")
    with LocalSandbox(root) as sandbox:
        (root / "etc").symlink_to("/etc")
        (root / "evil").symlink_to(outside)
        (root / "chain").symlink_to("evil/secret.txt")
        with pytest.raises(EnvError, match="outside the workspace"):
            sandbox.read("etc/passwd")
        with pytest.raises(EnvError, match="outside the workspace"):
            sandbox.read("chain")
        with pytest.raises(EnvError, match="outside the workspace"):
            sandbox.write("evil/planted.txt", b"x")
        with pytest.raises(EnvError, match="outside the workspace"):
            sandbox.write("chain", b"overwritten")
        with pytest.raises(EnvError, match="outside the workspace"):
            sandbox.copy("chain", "stolen.txt")
    assert not (outside / "planted.txt").exists()
    assert (outside / "secret.txt").read_bytes() == b"secret"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_is_refused_without_blocking(sb: LocalSandbox) -> None:
    os.mkfifo(sb.workspace / "pipe")
    started = time.monotonic()
    with pytest.raises(EnvError, match="'pipe'"):
        sb.read("pipe")
    with pytest.raises(EnvError, match="'pipe'"):
        sb.write("pipe", b"x")
    assert time.monotonic() - started < 5


def test_copy_in_file_links_or_copies(sb: LocalSandbox, tmp_path: Path) -> None:
    data = tmp_path / "train.csv"
    data.write_bytes(b"a,b\n1,2\n")
    sb.copy_in(data, "data/train.csv", link=True)
    sb.copy_in(data, "copied.csv")
    assert sb.read("data/train.csv") == data.read_bytes()
    assert (sb.workspace / "data" / "train.csv").stat().st_ino == data.stat().st_ino
    assert (sb.workspace / "copied.csv").stat().st_ino != data.stat().st_ino
    sb.copy_in(data, "data")  # into an existing directory, keeping the name
    assert sb.read("data/train.csv") == data.read_bytes()


def test_copy_in_directory_recursively(sb: LocalSandbox, tmp_path: Path) -> None:
    source = tmp_path / "dataset"
    (source / "sub").mkdir(parents=True)
    (source / "a.txt").write_bytes(b"a")
    (source / "sub" / "b.txt").write_bytes(b"b")
    sb.copy_in(source, "data", link=True)
    assert sb.read("data/a.txt") == b"a"
    assert sb.read("data/sub/b.txt") == b"b"
    linked = sb.workspace / "data" / "sub" / "b.txt"
    assert linked.stat().st_ino == (source / "sub" / "b.txt").stat().st_ino
    sb.copy_in(source, "plain")
    assert (sb.workspace / "plain" / "a.txt").stat().st_ino != (source / "a.txt").stat().st_ino
    with pytest.raises(SandboxError, match="does not exist"):
        sb.copy_in(tmp_path / "nothing", "x")


def test_harness_writes_never_modify_hard_linked_data(sb: LocalSandbox, tmp_path: Path) -> None:
    data = tmp_path / "train.csv"
    data.write_bytes(b"original")
    sb.copy_in(data, "train.csv", link=True)
    sb.copy_in(data, "again.csv", link=True)
    sb.write("train.csv", b"agent overwrote")
    sb.write("again.csv", b"+appended", append=True)
    sb.copy("train.csv", "again.csv")
    assert data.read_bytes() == b"original"
    assert sb.read("train.csv") == b"agent overwrote"
    assert sb.read("again.csv") == b"agent overwrote"


def test_copy_out_file_and_tree_without_leaking_outside(sb: LocalSandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_bytes(b"secret")
    sb.write("result/model.txt", b"weights")
    sb.write("result/sub/log.txt", b"log")
    (sb.workspace / "result" / "leak").symlink_to(secret)
    (sb.workspace / "result" / "leakdir").symlink_to(tmp_path)
    (sb.workspace / "result" / "alias.txt").symlink_to("model.txt")
    sb.copy_out("result/model.txt", tmp_path / "out" / "model.txt")
    assert (tmp_path / "out" / "model.txt").read_bytes() == b"weights"
    sb.copy_out("result", tmp_path / "tree")
    assert (tmp_path / "tree" / "sub" / "log.txt").read_bytes() == b"log"
    assert (tmp_path / "tree" / "alias.txt").read_bytes() == b"weights"
    assert not os.path.lexists(tmp_path / "tree" / "leak")
    assert not os.path.lexists(tmp_path / "tree" / "leakdir")
    with pytest.raises(EnvError, match="'missing'"):
        sb.copy_out("missing", tmp_path / "x")
    with pytest.raises(EnvError, match="outside the workspace"):
        sb.copy_out("result/leak", tmp_path / "y")


# ---------------------------------------------------------------------------------------------
# Running commands


def test_exec_captures_output_and_returncode(sb: LocalSandbox) -> None:
    result = run(sb, "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)")
    assert result == ExecResult(3, "out\n", "err\n", False, result.duration, 0, result.cpu_time)
    assert 0 < result.duration < 20


def test_exec_captures_traceback_on_failure(sb: LocalSandbox) -> None:
    result = run(sb, "print('before')\nraise ValueError('boom in training')")
    assert result.returncode == 1
    assert result.stdout == "before\n"
    assert "Traceback" in result.stderr
    assert "ValueError: boom in training" in result.stderr


def test_exec_runs_in_the_workspace(sb: LocalSandbox) -> None:
    script = "import os\nprint(open('data.txt').read(), os.getcwd())\nopen('out.txt', 'w').write('done')\n"
    sb.write("train.py", script.encode())
    sb.write("data.txt", b"payload")
    result = sb.exec([sys.executable, "train.py"], timeout=20, output_limit=10_000)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"payload {sb.workspace}\n"
    assert sb.read("out.txt") == b"done"
    assert not (sb.workspace / "__pycache__").exists()


def test_exec_decodes_unicode_and_replaces_invalid_bytes(sb: LocalSandbox) -> None:
    result = run(
        sb,
        """
        import sys
        sys.stdout.buffer.write('héllo ✓ 日本語 🚀\\n'.encode('utf-8'))
        sys.stderr.buffer.write(b'bad \\xff\\xfe bytes\\n')
        """,
    )
    assert result.stdout == "héllo ✓ 日本語 🚀\n"
    assert result.stderr == "bad \ufffd\ufffd bytes\n"


def test_exec_passes_stdin(sb: LocalSandbox) -> None:
    result = run(sb, "import sys; print(sys.stdin.read().upper())", stdin="hello ✓")
    assert result.stdout == "HELLO ✓\n"
    quiet = run(sb, "import sys; print(repr(sys.stdin.read()))")
    assert quiet.stdout == "''\n"


def test_exec_of_missing_program_is_a_sandbox_error(sb: LocalSandbox) -> None:
    with pytest.raises(SandboxError, match="could not start"):
        sb.exec([str(sb.workspace / "no-such-program")], timeout=5, output_limit=100)
    with pytest.raises(SandboxError):
        sb.exec([], timeout=5, output_limit=100)


def test_exec_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-openai")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-fake-anthropic")
    monkeypatch.setenv("MLAB_HARNESS_SECRET", "hidden")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with LocalSandbox(base_env={"CUDA_VISIBLE_DEVICES": "0", "SHARED": "base"}) as sandbox:
        result = run(
            sandbox,
            "import json, os, tempfile\n"
            "print(json.dumps({'env': dict(os.environ), 'tmp': tempfile.gettempdir()}))",
            env={"SHARED": "call", "EXTRA": "1"},
        )
        home = sandbox.home
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    env = seen["env"]
    for hidden in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MLAB_HARNESS_SECRET", "PYTHONPATH"):
        assert hidden not in env
    assert "sk-fake" not in result.stdout
    assert env["HOME"] == str(home)
    assert Path(env["TMPDIR"]).is_relative_to(home)
    assert Path(seen["tmp"]).is_relative_to(home)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"
    assert env["MPLBACKEND"] == "Agg"
    assert env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["SHARED"] == "call"
    assert env["EXTRA"] == "1"
    if "PATH" in os.environ:
        assert env["PATH"] == os.environ["PATH"]
    allowed = {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "HOME", "TMPDIR"}
    allowed |= {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "MPLBACKEND", "CUDA_VISIBLE_DEVICES"}
    allowed |= {"SHARED", "EXTRA", "LC_CTYPE", "PWD"}  # PWD/LC_CTYPE may be added by the OS or Python
    allowed |= set(THREAD_VARIABLES)  # the item's share of the cores, under xdist (sandbox/threads.py)
    assert set(env) <= allowed, set(env) - allowed


def test_output_cap_keeps_head_and_tail(sb: LocalSandbox) -> None:
    result = run(
        sb,
        "import sys; sys.stdout.write('A' * 50 + 'B' * 1000 + 'C' * 50); sys.stderr.write('E' * 130)",
        limit=100,
    )
    assert result.stdout == "A" * 50 + omission_marker(1000) + "C" * 50
    assert result.stderr == "E" * 50 + omission_marker(30) + "E" * 50
    assert result.truncated_bytes == 1030
    small = run(sb, "print('x' * 98)", limit=100)
    assert small.stdout == "x" * 98 + "\n"
    assert small.truncated_bytes == 0


def test_hundred_megabytes_of_output_is_capped_with_bounded_memory(sb: LocalSandbox) -> None:
    size = 100 * 1024 * 1024
    limit = 10_000
    code = """
        import sys
        out, err = sys.stdout.buffer, sys.stderr.buffer
        out.write(b'BEGIN')
        chunk = b'x' * (1024 * 1024)
        for i in range(100):
            out.write(chunk)
            err.write(chunk[:1024])  # interleaved: both pipes must be drained concurrently
        out.write(b'END')
    """
    tracemalloc.start()
    try:
        started = time.monotonic()
        result = run(sb, code, timeout=120, limit=limit)
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result.timed_out
    assert result.returncode == 0, result.stderr[-500:]
    assert elapsed < 60
    assert peak < 16 * 1024 * 1024, peak
    assert result.stdout.startswith("BEGIN" + "x" * 100)
    assert result.stdout.endswith("x" * 100 + "END")
    dropped_out = size + len("BEGIN") + len("END") - limit
    dropped_err = 100 * 1024 - limit
    assert omission_marker(dropped_out) in result.stdout
    assert len(result.stdout) == limit + len(omission_marker(dropped_out))
    assert result.truncated_bytes == dropped_out + dropped_err


def test_timeout_kills_the_command_promptly(sb: LocalSandbox) -> None:
    started = time.monotonic()
    result = run(
        sb,
        """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print('started', flush=True)
        time.sleep(60)
        """,
        timeout=1,
    )
    assert time.monotonic() - started < 10
    assert result.timed_out is True
    assert result.returncode is None
    assert result.stdout == "started\n"
    assert 1 <= result.duration < 10


def test_timeout_also_kills_children(sb: LocalSandbox) -> None:
    result = run(
        sb,
        """
        import subprocess, time
        child = subprocess.Popen(['sleep', '60'])
        print(child.pid, flush=True)
        time.sleep(60)
        """,
        timeout=1.5,
    )
    assert result.timed_out
    pid = int(result.stdout.split()[0])
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


def test_fork_holding_stdout_open_does_not_block_exec(sb: LocalSandbox) -> None:
    started = time.monotonic()
    result = run(
        sb,
        """
        import os, time
        pid = os.fork()
        if pid == 0:
            time.sleep(60)  # keeps the inherited stdout and stderr open
            os._exit(0)
        print(pid, flush=True)
        """,
    )
    assert time.monotonic() - started < 10
    assert result.returncode == 0
    assert not result.timed_out
    pid = int(result.stdout.split()[0])
    deadline = time.monotonic() + 5
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid)


_MARKER_CHILD = "import sys, time; time.sleep(2); open(sys.argv[1], 'w').write('survived')"

_BACKGROUND_SCENARIOS = {
    # A plain background child in the command's own process group.
    "popen": """
        import subprocess, sys
        child = subprocess.Popen([sys.executable, '-c', CHILD, MARKER])
        print(child.pid, flush=True)
    """,
    # A forked child (no exec) that outlives its parent.
    "fork": """
        import os, sys, time
        pid = os.fork()
        if pid == 0:
            os.closerange(0, 3)
            time.sleep(2)
            open(MARKER, 'w').write('survived')
            os._exit(0)
        print(pid, flush=True)
    """,
    # A child in its own process group (same session), not holding our pipes.
    "setpgid": """
        import os, subprocess, sys
        child = subprocess.Popen([sys.executable, '-c', CHILD, MARKER], preexec_fn=os.setpgrp,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(child.pid, flush=True)
    """,
    # A double-forked daemon in a new session (orphaned at once, so no poll sees its parent)
    # that still holds the inherited stdout.
    "setsid-holding-pipe": """
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            pid = os.fork()
            if pid == 0:
                time.sleep(2)
                open(MARKER, 'w').write('survived')
                os._exit(0)
            print(pid, flush=True)
            os._exit(0)
        os.wait()
    """,
    # A child in a new session with its output redirected; its parent lives a little while.
    "setsid-quiet": """
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, '-c', CHILD, MARKER], start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(child.pid, flush=True)
        time.sleep(0.8)
    """,
}


@needs_proc
def test_no_background_process_survives_exec(sb: LocalSandbox, tmp_path: Path) -> None:
    pids: dict[str, int] = {}
    for name, body in _BACKGROUND_SCENARIOS.items():
        marker = tmp_path / f"{name}.marker"
        code = f"CHILD = {_MARKER_CHILD!r}\nMARKER = {str(marker)!r}\n" + textwrap.dedent(body)
        started = time.monotonic()
        result = run(sb, code)
        assert time.monotonic() - started < 10, name
        assert result.returncode == 0, (name, result.stderr)
        pids[name] = int(result.stdout.split()[0])
    time.sleep(3)
    survivors = [name for name in pids if (tmp_path / f"{name}.marker").exists()]
    assert survivors == []
    running = [name for name, pid in pids.items() if alive(pid)]
    assert running == []


def test_close_is_safe_after_many_execs(sb: LocalSandbox) -> None:
    for index in range(3):
        assert run(sb, f"print({index})").stdout == f"{index}\n"
    sb.close()
    assert not sb.workspace.exists()
